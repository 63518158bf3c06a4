"""Reports (issue #6), the parts that need no server: the option defaults the commands are
rebuilt with (k6/contract.json, as k6 itself reads it), the rebuilt commands, password scrubbing,
version labels, run resolution."""
import json
import re
import subprocess

import pytest

from conftest import ROOT

from tidbbench import ReportError
from tidbbench import commands
from tidbbench.report.fmt import short_version, workload_name
from tidbbench.report import manifest
from tidbbench.report.manifest import resolve

pytestmark = pytest.mark.fast


def k6_help_defaults():
    """name -> default text, as our k6 itself prints them (`-e help=1`: k6/lib/config.js's view)."""
    p = subprocess.run([str(ROOT / "bin/k6"), "run", "-q", "-e", "help=1", str(ROOT / "k6/oltp.js")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return dict(re.findall(r"^  (\w+)=(\S*)", p.stdout, re.M))


def test_defaults_are_the_contracts_as_k6_reads_it():
    """The report rebuilds commands with the defaults k6 itself uses: both read k6/contract.json,
    and k6's `-e help=1` shows the same names and defaults."""
    contract = json.loads((ROOT / "k6/contract.json").read_text())["options"]
    assert commands.DEFAULTS == {k: v["default"] for k, v in contract.items()} and len(contract) > 40
    shown = k6_help_defaults()
    assert list(shown) == list(commands.DEFAULTS)
    assert shown == {k: commands.value_text(v) for k, v in commands.DEFAULTS.items()}


def test_rebuilt_commands_show_non_defaults_and_never_the_password():
    opts = dict(commands.DEFAULTS)
    opts.update(workload="oltp_read_write", mysql_db="sbtest_x", mysql_password="hunter2", tables=16,
                table_size=100000, threads=[150, 300], time=300, warmup_time=60, rand_type="uniform",
                mysql_ignore_errors=[1062, 2013, 8028, 9007], auto_inc=False, preset="tidb", testid="abc",
                results_dir="/somewhere", command="prepare")
    run = commands.k6_command(commands.run_options(opts), "k6/oltp.js")
    assert run.splitlines() == [
        "scripts/k6 run \\", "    -e workload=oltp_read_write \\", "    -e mysql_host=127.0.0.1 \\",
        "    -e mysql_port=4000 \\", "    -e mysql_user=sbtest \\", "    -e mysql_db=sbtest_x \\",
        "    -e preset=tidb \\", "    -e tables=16 \\", "    -e table_size=100000 \\", "    -e threads=150,300 \\",
        "    -e time=300 \\", "    -e warmup_time=60 \\", "    -e mysql_ignore_errors=1062,2013,8028,9007 \\",
        "    -e auto_inc=false \\", "    -e rand_type=uniform \\", "    k6/oltp.js"]
    prep = commands.k6_command(commands.prepare_options(opts, 8), "k6/prepare.js")
    assert "-e auto_inc=false" in prep and "-e threads=8" in prep and "workload" not in prep
    assert "hunter2" not in run + prep and "testid" not in run and "results_dir" not in run
    # odd values are shell-quoted
    assert "-e 'create_table_options=ENGINE=InnoDB ROW_FORMAT=COMPRESSED'" in commands.k6_command(
        [("create_table_options", "ENGINE=InnoDB ROW_FORMAT=COMPRESSED")], "k6/prepare.js")


def test_scrub_argv():
    argv = ["scripts/sweep", "-e", "mysql_password=hunter2", "--mysql-password", "x", "--mysql-password=y", "-e",
            "tables=2"]
    assert commands.scrub_argv(argv) == ["scripts/sweep", "-e", "mysql_password=***", "--mysql-password", "***",
                                         "--mysql-password=***", "-e", "tables=2"]


@pytest.mark.parametrize("product,version,short", [
    ("tidb", "v1.1.0-beta.0.20251126154744-e4e814fdc0af+module-build", "v1.1.0-beta.0-e4e814fdc0af"),
    ("tidb", "v8.1.0", "v8.1.0"),
    ("tidb", "v0.0.0-20251126154744-e4e814fdc0af", "v0.0.0-e4e814fdc0af"),
    ("mariadb", "10.11.19-MariaDB-0+deb12u1", "10.11.19"),
    ("mysql", "8.0.36", "8.0.36"),
    ("tidb", "", "unknown version"),
])
def test_short_version(product, version, short):
    assert short_version(product, version) == short


def test_workload_names_follow_the_seeds():
    assert [workload_name(w) for w in ("oltp_point_select", "oltp_update_non_index", "oltp_update_index",
                                       "oltp_read_write")] == \
        ["Point Select", "Update Non-index", "Update Index", "Read Write"]


def test_resolve_testid_and_sweep(tmp_path):
    golden = ROOT / "tests/golden/report/results"
    rs = resolve(golden, "dev-tidb-oltp_point_select")
    assert rs.kind == "run" and [r.workload for r in rs.runs] == ["oltp_point_select"]
    for name in ("sweep-dev-tidb", "dev-tidb"):  # with or without the sweep- prefix
        rs = resolve(golden, name)
        assert rs.kind == "sweep" and rs.id == "sweep-dev-tidb"
        assert [r.testid for r in rs.runs] == ["dev-tidb-oltp_point_select", "dev-tidb-oltp_read_write"]
    # a sweep listing a testid whose manifest is gone names it
    (tmp_path / "sweep-x.json").write_text(json.dumps({"sweep": "sweep-x", "runs": [
        {"workload": "oltp_point_select", "testid": "gone-1"}]}))
    with pytest.raises(ReportError, match=r"unknown testid 'gone-1' \(listed by sweep 'sweep-x'\)"):
        resolve(tmp_path, "sweep-x")
    # a manifest without measured windows cannot be matched with Prometheus
    (tmp_path / "t1.json").write_text(json.dumps({"testid": "t1", "workload": "oltp_point_select",
                                                  "steps": [{"threads": 2, "qps": 1}]}))
    with pytest.raises(ReportError, match="no measured window"):
        resolve(tmp_path, "t1")


def test_a_tpcc_manifest_resolves_as_tpcc():
    """Issue #46: k6/tpcc.js's manifest (tpmC per step, no QPS) resolves like an OLTP run's, and the
    report lays it out as a TPC-C report (tidbbench/report/tpcc.py; tests/test_tpcc_report.py)."""
    rs = resolve(ROOT / "tests/golden/tpcc/results", "tpcc-golden-a")
    assert rs.kind == "run" and [r.workload for r in rs.runs] == ["tpcc"] and manifest.is_tpcc(rs)
    assert not manifest.is_tpcc(resolve(ROOT / "tests/golden/report/results", "dev-tidb-oltp_point_select"))
