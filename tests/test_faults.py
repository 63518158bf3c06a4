"""Issue 11: the run survives the faults around it, loses nothing, and says what happened.

Every fault is made on the running local stack with its own commands (scripts/stack
kill|stop|restart SERVICE, driven by tools/tbstools/faultkit.py; a TCP proxy of ours cuts the
network), on a database of the faults' own (sbtest_faults): the stack's servers are killed and
stopped, and every one of them runs again when the module ends. The faults that leave the servers
alone (the cut network, no Prometheus at its address, signals to k6, an unwritable results folder,
the service commands on stand-ins) are tests/test_faults_client.py's: they run beside other tests. k6 runs through scripts/k6
exactly as a user runs it. tools/faults runs the same scenarios, longer, with sysbench 1.0.20
beside k6, and prints the table of docs/faults.md.
"""
import os

import pytest

from tbstools import faultkit as fs

import faultchecks as fc
from faultchecks import faults_box  # noqa: F401 (the fixture sb: the faults' own tables, every service running again at the end)

# serial (conftest.py): it kills, stops and restarts the stack's servers
pytestmark = [pytest.mark.full, pytest.mark.serial]


# ---------------------------------------------------------------------------- 1. database faults
# kill on both servers (each recovers its own way: TiDB restarts, MariaDB runs crash recovery);
# the cut network, which leaves the servers alone, is tests/test_faults_client.py's
@pytest.mark.parametrize("target,kind,per_vu", [("tidb", "kill", "auto"), ("mariadb", "kill", "auto")])
def test_database_fault_mid_step_run_goes_on(sb, target, kind, per_vu, tmp_path):
    fc.db_fault_run_goes_on(sb, target, kind, per_vu, tmp_path)


@pytest.mark.parametrize("target", ["tidb", "mariadb"])
def test_server_stopped_for_longer_than_the_step(sb, target):
    """Stopped 3 s into an 8 s step and not back before it ends: the VUs keep retrying (they do
    not abort the run), the step ends on time, exit 0, the gap is reported."""
    row = fs.db_fault(sb, target, "stop", seconds=8, at=3, steps="2")
    r = row["_run"]
    assert r.returncode == 0, r.output[-3000:]
    (st,) = r.summary["steps"]
    assert st["max_gap_s"] >= 4.0, st
    assert st["reconnects"] >= 2 and st["transactions"] > 0
    assert row["wall_s"] <= 8 + fs.GRACE_S + fs.connect_s(2) + 4, row
    assert "run_end" in r.summary


# ---------------------------------------------------------------------------- 2. observability faults
def test_prometheus_killed_mid_step_totals_still_equal_k6s(sb):
    row = fs.prometheus_fault(sb, "kill", seconds=12, at=3, down=5)
    r = row["_run"]
    assert r.returncode == 0, r.output[-3000:]
    assert row["totals"] and all(p == k for _, p, k in row["totals"]), row["totals"]
    # the run was never held up by it
    assert row["gap_s"] < 1, row


def test_prometheus_missed_a_step_report_falls_back_to_k6s_summary(sb, tmp_path):
    row = fs.prometheus_fault(sb, "missed_step", seconds=6, threads=4)
    r = row["_run"]
    assert r.returncode == 0, r.output[-3000:]
    (t1, p1, k1), (t2, p2, k2) = row["totals"]
    assert p1 is None and p2 == k2, row["totals"]
    p, md = fc.report(sb, r.testid, tmp_path)
    assert p.returncode == 0, p.stderr
    text = md.read_text()
    step1 = r.summary["steps"][0]
    assert f"Prometheus has no data for the {t1}-thread step" in text, text
    # the step's figures are k6's own, not zeros
    assert f"| {t1} | {step1['qps']:.2f} |" in text, text
    assert "k6's summary" in p.stderr


def test_log_lines_written_while_loki_was_down_arrive(sb):
    row = fs.loki_fault(sb, seconds=10, at=2, down=2)
    r = row["_run"]
    assert r.returncode == 0, r.output[-2000:]
    assert row["log_lines"] > 10
    assert row["loki_lines"] == row["log_lines"], row
    assert row["loki_lines_during_outage"] >= 3, row  # a line a second while Loki was away
    assert row["gap_s"] < 1


# ---------------------------------------------------------------------------- 4. a short soak
def test_short_soak_with_a_fault_keeps_memory_and_descriptors_flat(sb):
    """42 s at full speed (oltp_read_only: fs.workload_for) with TiDB killed in the middle,
    sampled every 4 s (tools/faults soak runs 30 minutes; TBS_SOAK_MINUTES makes this one
    longer): k6's RSS stays flat, its file descriptors and connections come back to what they
    were (the connections of the killed server are closed, not leaked)."""
    row = fs.soak(sb, minutes=float(os.environ.get("TBS_SOAK_MINUTES", "0.7")), threads=8, sample_every=4)
    r = row["_run"]
    assert r.returncode == 0, r.output[-3000:]
    assert row["samples"] >= 8, row
    a, b, peak = row["k6_rss_kb"]
    assert b <= a * 1.25 + 20 * 1024, row  # flat: at most 25% + 20 MiB over the first quarter's
    fa, fb, _ = row["k6_fds"]
    assert fb <= fa + 4, row
    ca, cb = row["k6_conns"]
    assert cb <= ca + 2, row
    assert row["reconnects"] >= 8 and row["gap_s"] >= 3, row
    for name in ("prometheus", "loki", "otelcol"):
        a, b, _ = row[f"{name}_rss_kb"]
        assert b <= a * 1.5 + 64 * 1024, (name, row[f"{name}_rss_kb"])
