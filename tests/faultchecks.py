"""What tests/test_faults.py (the faults that kill and stop the stack's servers: serial) and
tests/test_faults_client.py (the faults that leave them alone: side by side) share: the faults'
own tables and folder on the running stack (tbstools.drive.Stack), a database fault's checks,
and the report of a run."""
import subprocess

import pytest

from conftest import ROOT
from tbstools import faultkit as fs


@pytest.fixture(scope="module", name="sb")
def faults_box(tmp_path_factory, stack):
    """The faults' own database (sbtest_faults) made afresh on both targets, a results folder of
    their own; every service a fault left stopped runs again at the end."""
    box = fs.Stack(tmp_path_factory.mktemp("faults"))
    try:
        for target in ("tidb", "mariadb"):
            box.prepare(target)
        yield box
    finally:
        box.close()


def report(sb, testid, tmp_path):
    p = subprocess.run([str(ROOT / "scripts/report"), "--prometheus", sb.url("prometheus"), "--results", str(sb.results),
                        "--out", str(tmp_path / f"report-{testid}"), testid], capture_output=True, text=True, timeout=300)
    return p, (tmp_path / f"report-{testid}" / "report.md")


def db_fault_run_goes_on(sb, target, kind, per_vu, tmp_path):
    """The server killed (-9) and started 4 s later, or the network to it cut and refused for
    4 s, 2 s into the first of two steps: the run keeps going, reconnects, ends at its planned
    time with exit 0; the results file and the report name the disturbed step and how long no
    event completed; the second step is undisturbed; Prometheus' totals equal k6's; no half
    event was committed (oltp_read_write; a TiDB kill runs oltp_read_only: fs.workload_for says
    why). 16-s steps: the stack's MariaDB (2 GiB buffer pool) takes 1-6 s of crash
    recovery after kill -9 on a busy machine before it answers again (events again by 12 s)."""
    seconds = 16
    row = fs.db_fault(sb, target, kind, seconds=seconds, at=2, down=4, steps="2,4", k6_opts={"threads_per_vu": per_vu})
    r = row["_run"]
    assert r.returncode == 0, r.output[-3000:]
    steps = r.summary["steps"]
    assert [s["threads"] for s in steps] == [2, 4]
    first, second = steps
    assert first["reconnects"] >= 2, first  # each of the 2 threads lost its connection at least once
    # a lost connection counts as a reconnect, not as an error, as sysbench counts it (other
    # ignorable errors may come with a crash: MariaDB's recovery, TiDB's schema reload)
    lost = sb.prom(f'sum(max_over_time(k6_oltp_errors_total{{testid="{r.testid}",code=~"2013|2003|2006|2055"}}[10m]))')
    assert not lost or float(lost[0]["value"][1]) == 0, lost
    # ~4 s without a finished event (plus the restart), and events again before the step's end
    assert 3.5 <= first["max_gap_s"] <= seconds - 2 - 1, first
    gap_start = first["max_gap_start"] / 1000
    assert abs(gap_start - r.events[0][0]) < 1.5, (gap_start, r.events)
    assert second["max_gap_s"] < 2 and second["reconnects"] == 0, second
    assert first["transactions"] > 0 and second["transactions"] > 0
    assert row["qps_after"] and row["qps_after"] > 0
    assert not r.summary.get("interrupted") and not first.get("interrupted")
    # it ended at its planned time: two steps (+ connect and graceful stop each)
    assert row["wall_s"] <= 2 * (seconds + fs.GRACE_S + fs.connect_s(4)) + 4, row
    if row["workload"] == "oltp_read_write":
        assert row["rows_intact"], "a half event (a DELETE without its INSERT) was committed"
    else:  # a TiDB kill reads only (fs.workload_for: the local TiDB's storage dies with it)
        assert (target, kind, row["workload"], row["rows_intact"]) == ("tidb", "kill", "oltp_read_only", None), row
    for s in steps:
        assert sb.step_total(r.testid, s) == s["queries"]["total"]
    p, md = report(sb, r.testid, tmp_path)
    assert p.returncode == 0, p.stderr
    text = md.read_text()
    assert "Disturbances" in text
    assert f"2 threads: no event completed for {first['max_gap_s']:.1f} s" in text, text
    assert "4 threads: no event completed" not in text
