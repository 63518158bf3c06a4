"""Licensing (issue 13): LICENSE is the AGPL-3.0 that the k6 we link ships, and NOTICE is what
scripts/notice generates from the files that pin the versions (scripts/lib/versions.sh,
k6/go.mod, .env); any drift fails."""
import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys

from conftest import ROOT

import pytest

pytestmark = pytest.mark.fast


def notice_module(root):
    """scripts/notice loaded as a module, reading the pins under `root`."""
    loader = importlib.machinery.SourceFileLoader("tbs_notice", str(ROOT / "scripts/notice"))
    spec = importlib.util.spec_from_loader("tbs_notice", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    mod.ROOT = root
    mod.NOTICE = root / "NOTICE"
    return mod


def gomodcache():
    p = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True)
    return p.stdout.strip()


def test_license_is_the_agpl_k6_ships():
    gomod = (ROOT / "k6/go.mod").read_text()
    k6v = re.search(r"^\s*go\.k6\.io/k6 (v\S+)", gomod, re.M).group(1)
    shipped = os.path.join(gomodcache(), f"go.k6.io/k6@{k6v}", "LICENSE.md")
    if not os.path.exists(shipped):  # the module cache is filled by scripts/build k6
        subprocess.run(["go", "mod", "download", f"go.k6.io/k6@{k6v}"], cwd=ROOT / "k6", check=True)
    text = (ROOT / "LICENSE").read_text()
    assert text == open(shipped, encoding="utf-8").read()
    assert "GNU AFFERO GENERAL PUBLIC LICENSE" in text and "Version 3, 19 November 2007" in text


def test_notice_is_generated_from_the_pins():
    p = subprocess.run([sys.executable, str(ROOT / "scripts/notice"), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    notice = (ROOT / "NOTICE").read_text()
    mod = notice_module(ROOT)
    # every pinned version is in it, each from the file that pins it
    versions = mod.shell_vars(ROOT / "scripts/lib/versions.sh")
    for key in ("TIDB_MODULE_VERSION", "PROMETHEUS_VERSION", "LOKI_VERSION", "OTELCOL_VERSION", "COMPOSE_VERSION"):
        assert f"| {versions[key]} |" in notice, key
    env = mod.shell_vars(ROOT / ".env")
    assert f"| {env['TIDB_VERSION']} |" in notice
    images = [k for k in env if k.endswith("_IMAGE") and k not in ("K6_IMAGE", "NIGHTLY_IMAGE")]  # ours, built here
    assert len(images) >= 8
    for k in images:
        assert f"| {env[k].rsplit(':', 1)[1]} |" in notice and k in notice, k
    gomod = mod.go_requires(ROOT / "k6/go.mod")
    for m in ("go.k6.io/k6", "github.com/grafana/xk6-sql", "github.com/go-sql-driver/mysql",
              "github.com/grafana/xk6-dashboard"):
        assert f"({m}) | {gomod[m]} |" in notice, m
    # what the issue names, with its licence
    for name, lic in [("k6", "AGPL-3.0-only"), ("xk6-sql", "Apache-2.0"), ("Go MySQL driver", "MPL-2.0"),
                      ("TiDB", "Apache-2.0"), ("Prometheus", "Apache-2.0"), ("Loki", "AGPL-3.0-only"),
                      ("OpenTelemetry Collector", "Apache-2.0"), ("Grafana", "AGPL-3.0-only"), ("node_exporter", "Apache-2.0"),
                      ("MariaDB", "GPL-2.0-only"), ("sysbench", "GPL-2.0-or-later")]:
        assert re.search(rf"^\| {re.escape(name)}\b[^|]*\| [^|]+ \| {re.escape(lic)}", notice, re.M), name


def test_notice_check_fails_on_drift(tmp_path):
    """A changed pin (here: TiDB's compose version in a copy of .env) makes --check fail."""
    for rel in ("scripts/lib/versions.sh", "k6/go.mod", ".env", "tidbbench/requirements.txt", "NOTICE"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    mod = notice_module(tmp_path)
    assert mod.main(["notice", "--check"]) == 0
    env = (tmp_path / ".env").read_text()
    (tmp_path / ".env").write_text(re.sub(r"^TIDB_VERSION=\S+", "TIDB_VERSION=v8.5.99", env, flags=re.M))
    assert mod.main(["notice", "--check"]) == 1
    assert mod.main(["notice"]) == 0 and "| v8.5.99 |" in (tmp_path / "NOTICE").read_text()
    assert mod.main(["notice", "--check"]) == 0
