"""tests/tools/alloycheck (bin/alloy-check) checks compose/alloy/config.alloy with Alloy's own
parser and evaluator against tests/tools/alloycheck/schema.json, a table of the components,
arguments, blocks and exports config.alloy uses. Here: the table is the one Alloy's reference
documentation gives for the release .env pins (the pages are in that release's module, from the
Go module proxy), a version bump in .env fails until the table is re-checked, and the checker
fails configs Alloy would refuse (tests/test_compose_k6.py runs it on the real config and on
misspelt attributes, references, actions, functions, components and syntax errors)."""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.fast

CHECK = ROOT / "tests/tools/alloycheck"
SCHEMA = json.loads((CHECK / "schema.json").read_text())


def pinned_version():
    m = re.search(r"^ALLOY_IMAGE=grafana/alloy:(v\d+\.\d+\.\d+)$", (ROOT / ".env").read_text(), re.M)
    assert m, "ALLOY_IMAGE in .env is not grafana/alloy:vX.Y.Z"
    return m.group(1)


def section(text, heading):
    """The text under a markdown heading, up to the next heading of its level or above."""
    level = heading.split(" ")[0]
    m = re.search(r"^" + re.escape(heading) + r"\s*$(.*?)(?=^#{1," + str(len(level)) + r"} |\Z)", text, re.M | re.S)
    assert m, f"no section {heading!r}"
    return m.group(1)


def table(text, docs):
    """{name: {type, required, default}} of a section's first documented table; a section that
    only includes a shared page (docs/shared lookup=...) is read from that page."""
    rows = re.findall(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|([^\n]*)$", text, re.M)
    if not rows:
        m = re.search(r'docs/shared lookup="([^"]+)"', text)
        assert m, f"no table and no shared page in:\n{text[:500]}"
        text = (docs / "shared" / m.group(1)).read_text()
        rows = re.findall(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|([^\n]*)$", text, re.M)
    out = {}
    for name, typ, rest in rows:
        cells = [c.strip() for c in rest.split("|")]
        entry = {"type": typ}
        if len(cells) >= 4:  # description, default, required (exports have a description only)
            entry["default"] = cells[1].strip("`").strip('"')
            entry["required"] = cells[2] == "yes"
        out[name] = entry
    return out, text


def differences(ours, theirs, what):
    """What makes our table wrong: a name the docs lack or give another type, required flag or
    default; a name the docs require that we lack."""
    bad = []
    for name, a in ours.items():
        d = theirs.get(name)
        if d is None:
            bad.append(f"{what} {name}: not in Alloy's docs")
            continue
        if a["type"] != d["type"] or a.get("required", False) != d["required"]:
            bad.append(f"{what} {name}: ours {a['type']}, required={a.get('required', False)}; "
                       f"the docs' {d['type']}, required={d['required']}")
        if "default" in a and a["default"] != d["default"]:
            bad.append(f"{what} {name}: default ours {a['default']!r}, the docs' {d['default']!r}")
    bad += [f"{what} {name}: required by the docs, missing here" for name, d in theirs.items()
            if d.get("required") and name not in ours]
    return bad


@pytest.fixture(scope="module")
def alloy_docs():
    v = pinned_version()
    p = subprocess.run(["go", "mod", "download", "-json", f"github.com/grafana/alloy@{v}"], cwd="/tmp",
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, GOFLAGS=os.environ["GOFLAGS"] + " -mod=mod", GOSUMDB="off"))
    info = json.loads(p.stdout or "{}")
    assert p.returncode == 0 and info.get("Dir"), \
        f"Alloy {v}'s source is not to be had from the Go module proxy: {info.get('Error', p.stderr)}"
    return Path(info["Dir"]) / "docs/sources"


def test_the_schema_is_the_pinned_release():
    assert SCHEMA["alloy"] == pinned_version(), \
        f".env pins Alloy {pinned_version()}, tests/tools/alloycheck/schema.json is {SCHEMA['alloy']}'s: re-check it"


def test_the_schema_is_what_alloys_docs_give(alloy_docs):
    assert sorted(SCHEMA["components"]) == ["discovery.docker", "discovery.relabel", "local.file_match",
                                            "loki.source.docker", "loki.source.file", "loki.write"]
    bad = []
    for name, spec in SCHEMA["components"].items():
        page = (alloy_docs.parent.parent / spec["doc"]).read_text()
        assert re.search(r"^# `" + re.escape(name) + "`$", page, re.M), f"{spec['doc']} is not {name}'s page"
        args, _ = table(section(page, "## Arguments"), alloy_docs)
        bad += differences(spec["arguments"], args, name)
        for block, bspec in spec.get("blocks", {}).items():
            args, text = table(section(page, f"### `{block}`"), alloy_docs)
            bad += differences(bspec["arguments"], args, f"{name} {block}")
            for arg, a in bspec["arguments"].items():
                if "enum" in a:  # the documented values: "* `drop` - ..."
                    documented = re.findall(r"^\*\s+`(\w+)`\s+-", text, re.M)
                    if sorted(a["enum"]) != sorted(documented):
                        bad.append(f"{name} {block} {arg}: values ours {a['enum']}, the docs' {documented}")
        exports, _ = (table(section(page, "## Exported fields"), alloy_docs)
                      if "doesn't export any fields" not in page else ({}, ""))
        if spec["exports"] != {k: e["type"] for k, e in exports.items()}:
            bad.append(f"{name} exports: ours {spec['exports']}, the docs' {exports}")
    assert not bad, "\n".join(bad)


def test_a_schema_that_differs_is_found():
    theirs = {"url": {"type": "string", "required": True, "default": ""},
              "name": {"type": "string", "required": False, "default": ""},
              "regex": {"type": "string", "required": False, "default": "(.*)"}}
    assert differences({"url": {"type": "string", "required": True}, "regex": {"type": "string", "default": "(.*)"}},
                       theirs, "c") == []
    assert differences({"url": {"type": "string"}}, theirs, "c") == \
        ["c url: ours string, required=False; the docs' string, required=True"]
    assert differences({"name": {"type": "string"}}, theirs, "c") == ["c url: required by the docs, missing here"]
    assert differences({"url": {"type": "string", "required": True}, "urls": {"type": "string"}}, theirs, "c") == \
        ["c urls: not in Alloy's docs"]
    assert differences({"url": {"type": "number", "required": True}}, theirs, "c")[0].startswith("c url: ours number")
    assert differences({"url": {"type": "string", "required": True}, "regex": {"type": "string", "default": ".*"}},
                       theirs, "c") == ["c regex: default ours '.*', the docs' '(.*)'"]


@pytest.fixture(scope="module")
def alloy_check(tmp_path_factory):
    """bin/alloy-check built from the source under test (Go's build cache makes it quick)."""
    out = tmp_path_factory.mktemp("alloy") / "alloy-check"
    subprocess.run(["go", "build", "-trimpath", "-o", str(out), "."], cwd=CHECK, check=True,
                   env=dict(os.environ, CGO_ENABLED="0"), timeout=600)
    return out


# What the schema and Alloy's evaluator catch beyond tests/test_compose_k6.py's broken configs:
# (what, text in config.alloy, its replacement, what the error names)
BROKEN = [
    ("misspelt block argument", "values = [", "valuez = [", 'unrecognized attribute name "valuez"'),
    ("misspelt block", "filter {", "filtr {", 'unrecognized block name "filtr"'),
    ("wrong type", 'refresh_interval = "5s"', "refresh_interval = 5", "missing unit in duration"),
    ("missing required argument", 'url = "http://loki:3100/loki/api/v1/push"', "",
     'missing required attribute "url"'),
    ("wrong capsule", "forward_to       = [loki.write.loki.receiver]",
     "forward_to       = [discovery.relabel.streams.rules]", 'expected capsule("main.LogsReceiver")'),
    ("bad regex", 'regex         = "/?(.*)"', 'regex         = "/?((.*)"', "missing closing )"),
]


@pytest.mark.parametrize("what,old,new,error", BROKEN, ids=[b[0] for b in BROKEN])
def test_the_checker_fails_what_alloy_would_refuse(alloy_check, tmp_path, what, old, new, error):
    good = (ROOT / "compose/alloy/config.alloy").read_text()
    env = dict(os.environ, COMPOSE_PROJECT_NAME="tidb-bench")
    p = subprocess.run([str(alloy_check), str(ROOT / "compose/alloy/config.alloy")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, f"the unchanged config fails: {p.stderr}"
    assert good.count(old) >= 1, f"config.alloy has no {old!r} to break"
    f = tmp_path / "broken.alloy"
    f.write_text(good.replace(old, new, 1))
    p = subprocess.run([str(alloy_check), str(f)], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode != 0, f"alloy-check accepted a broken config ({what})"
    assert error in p.stderr, p.stderr
