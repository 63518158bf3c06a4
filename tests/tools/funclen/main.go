// funclen: the Go functions of the files named on stdin (one path a line), one line each:
// path, first line, last line and name ("func literal" for an anonymous one), tab-separated
// (tests/test_function_length.py). The standard library's own parser: no dependency.
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
)

func main() {
	fset := token.NewFileSet()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		path := strings.TrimSpace(in.Text())
		if path == "" {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			name := ""
			switch fn := n.(type) {
			case *ast.FuncDecl:
				name = fn.Name.Name
			case *ast.FuncLit:
				name = "func literal"
			default:
				return true
			}
			from, to := fset.Position(n.Pos()).Line, fset.Position(n.End()).Line
			fmt.Printf("%s\t%d\t%d\t%s\n", path, from, to, name)
			return true
		})
	}
}
