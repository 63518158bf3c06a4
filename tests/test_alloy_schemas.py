"""Issue 10: the Alloy component schemas compose/alloy/check copies (for bin/alloy-check, which
checks compose/alloy/config.alloy with Alloy's own parser and evaluator) are the ones of the
Alloy release .env pins. Each copied struct names its source ("alloy-source: FILE TYPE"); this
test downloads that release's source from the Go module proxy and compares attribute and block
names and whether each is required. A version bump in .env fails until the schemas are
re-checked and main.go's "Checked against" line names the new version."""
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT

MAIN = ROOT / "compose/alloy/check/main.go"


def pinned_version():
    m = re.search(r"^ALLOY_IMAGE=grafana/alloy:(v\d+\.\d+\.\d+)$", (ROOT / ".env").read_text(), re.M)
    assert m, "ALLOY_IMAGE in .env is not grafana/alloy:vX.Y.Z"
    return m.group(1)


def struct_tags(text, name):
    """{alloy name: (kind, flags...)} of a Go struct's `alloy:"..."` tags (squashed fields: name '')."""
    m = re.search(r"^type " + re.escape(name) + r" struct \{\n(.*?)^\}", text, re.M | re.S)
    assert m, f"no struct {name}"
    out = {}
    for line in m.group(1).splitlines():
        t = re.search(r'alloy:"([^"]*)"', line)
        if t:
            name, *rest = t.group(1).split(",")
            out[name] = tuple(rest)
    return out


def copied():
    """[(our type, source file, source type)] from main.go's alloy-source lines."""
    text = MAIN.read_text()
    out = re.findall(r"^// alloy-source: (\S+) (\w+)\ntype (\w+) struct", text, re.M)
    return [(ours, f, theirs) for f, theirs, ours in out]


def differences(ours, theirs):
    """What makes our copy wrong: a name Alloy lacks or declares otherwise, a required one we lack."""
    bad = [f"{k}: ours {v}, Alloy's {theirs.get(k)}" for k, v in ours.items() if theirs.get(k) != v]
    bad += [f"{k}: required by Alloy, missing here" for k, v in theirs.items()
            if k and "optional" not in v and k not in ours]
    return bad


@pytest.fixture(scope="module")
def alloy_source():
    v = pinned_version()
    p = subprocess.run(["go", "mod", "download", "-json", f"github.com/grafana/alloy@{v}"], cwd="/tmp",
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, GOFLAGS="-mod=mod", GOSUMDB="off"))
    info = json.loads(p.stdout or "{}")
    assert p.returncode == 0 and info.get("Dir"), \
        f"Alloy {v}'s source is not to be had from the Go module proxy: {info.get('Error', p.stderr)}"
    return info["Dir"]


def test_the_schemas_were_checked_against_the_pinned_release():
    m = re.search(r"Checked against grafana/alloy (v\d+\.\d+\.\d+) \(ALLOY_IMAGE in \.env\)", MAIN.read_text())
    assert m and m.group(1) == pinned_version(), \
        f".env pins Alloy {pinned_version()}, the schemas in {MAIN} were checked against {m and m.group(1)}"


def test_every_copied_schema_matches_alloys_source(alloy_source):
    pairs = copied()
    assert len(pairs) == 7, pairs  # every component schema the checker decodes into names its source
    text = MAIN.read_text()
    for ours, f, theirs in pairs:
        src = os.path.join(alloy_source, f)
        assert os.path.exists(src), f"{ours}: {f} is not in Alloy {pinned_version()}"
        with open(src) as fh:
            bad = differences(struct_tags(text, ours), struct_tags(fh.read(), theirs))
        assert not bad, f"{ours} vs {f} {theirs}: {bad}"


def test_a_schema_that_differs_is_found():
    theirs = {"url": ("attr",), "name": ("attr", "optional"), "tenant_id": ("attr", "optional")}
    assert differences({"url": ("attr",), "name": ("attr", "optional")}, theirs) == []
    assert differences({"url": ("attr", "optional")}, theirs) == ["url: ours ('attr', 'optional'), Alloy's ('attr',)"]
    assert differences({"name": ("attr", "optional")}, theirs) == ["url: required by Alloy, missing here"]
    assert differences({"urls": ("attr",)}, theirs)[0].startswith("urls: ours")
