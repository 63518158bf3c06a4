// funclen.cjs: the JavaScript functions of the files named on stdin (one path a line), one line
// each: path, first line, last line, name, tab-separated (tests/test_function_length.py). Parsed
// by acorn, the parser ESLint's espree is built on (lint/package.json pins it; lint/node_modules).
"use strict";
const fs = require("fs");
const path = require("path");
const acorn = require(path.resolve(process.argv[2], "acorn"));

const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

// The name a reader would search for: the function's own, else the variable, property or method
// it is assigned to.
function childName(node, key, name) {
  if (node.type === "VariableDeclarator" && key === "init" && node.id.type === "Identifier") return node.id.name;
  if ((node.type === "Property" || node.type === "MethodDefinition") && key === "value") {
    return node.key.name || String(node.key.value);
  }
  return name;
}

function visit(file, node, name) {
  if (!node || typeof node.type !== "string") return;
  if (FUNCTIONS.has(node.type)) {
    const own = (node.id && node.id.name) || name || "(anonymous)";
    process.stdout.write([file, node.loc.start.line, node.loc.end.line, own].join("\t") + "\n");
  }
  for (const [key, value] of Object.entries(node)) {
    const children = Array.isArray(value) ? value : [value];
    for (const child of children) {
      if (child && typeof child === "object") visit(file, child, childName(node, key, name));
    }
  }
}

for (const file of fs.readFileSync(0, "utf8").split("\n").filter(Boolean)) {
  const source = fs.readFileSync(file, "utf8");
  visit(file, acorn.parse(source, { ecmaVersion: "latest", sourceType: "module", locations: true }));
}
