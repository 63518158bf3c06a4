"""The local log shipper's build (otelcol/, issue #45 item 10): one collector release, named once.
otelcol/go.mod pins the components; scripts/lib/versions.sh's OTELCOL_VERSION names the release
(NOTICE, scripts/build's cache); components.go states each component's module as the builder does."""
import re

import pytest

from conftest import ROOT

pytestmark = pytest.mark.fast

CONTRIB = "github.com/open-telemetry/opentelemetry-collector-contrib/"
CORE = "go.opentelemetry.io/collector/"


def requires():
    text = (ROOT / "otelcol/go.mod").read_text()
    direct = text.split("\n)\n", 1)[0]  # the first require block: what main.go and components.go import
    return dict(re.findall(r"^\s+(\S+) (v\S+)$", direct, re.M))


def versions():
    return dict(re.findall(r"^([A-Z_]+)=(\S+)$", (ROOT / "scripts/lib/versions.sh").read_text(), re.M))


def test_one_collector_release():
    release = versions()["OTELCOL_VERSION"]
    req = requires()
    contrib = {m: v for m, v in req.items() if m.startswith(CONTRIB)}
    assert contrib and set(contrib.values()) == {release}, contrib
    # the core modules of the same release: v0.<minor>.x (or v1.x, the stable ones)
    minor = release.split(".")[1]
    core = {m: v for m, v in req.items() if m.startswith(CORE)}
    assert req[CORE + "otelcol"].split(".")[1] == minor, req[CORE + "otelcol"]
    assert all(v.startswith("v1.") or v.split(".")[1] == minor for v in core.values()), core


def test_components_name_the_modules_go_mod_pins():
    text = (ROOT / "otelcol/components.go").read_text()
    named = dict(re.findall(r'"((?:github\.com|go\.opentelemetry\.io)/[\w./-]+) (v[\w.-]+)"', text))
    req = requires()
    assert len(named) == 3 and all(req.get(m) == v for m, v in named.items()), (named, req)
    # each named module is one components.go registers
    for m in named:
        pkg = m.rsplit("/", 1)[1]
        assert f"{pkg}.NewFactory()" in text, pkg
