"""Issue 11: the run survives the faults around it, loses nothing, and says what happened.

Every fault is made on the running local stack with its own commands (scripts/stack
kill|stop|restart SERVICE, driven by tools/tbstools/faultkit.py; a TCP proxy of ours cuts the
network), on a database of the faults' own (sbtest_faults): the stack's servers are killed and
stopped, and every one of them runs again when the module ends. k6 runs through scripts/k6
exactly as a user runs it. tools/faults runs the same scenarios, longer, with sysbench 1.0.20
beside k6, and prints the table of docs/faults.md.
"""
import os
import signal
import subprocess
import time

import pytest

from conftest import ROOT
from tbstools import faultkit as fs

# serial (conftest.py): it kills, stops and restarts the stack's servers
pytestmark = [pytest.mark.full, pytest.mark.serial]


@pytest.fixture(scope="module")
def sb(tmp_path_factory, stack):
    box = fs.Stack(tmp_path_factory.mktemp("faults"))
    try:
        for target in ("tidb", "mariadb"):
            box.prepare(target)
        yield box
    finally:
        box.close()  # every service a fault left stopped runs again


def report(sb, testid, tmp_path):
    p = subprocess.run([str(ROOT / "scripts/report"), "--prometheus", sb.url("prometheus"), "--results", str(sb.results),
                        "--out", str(tmp_path / f"report-{testid}"), testid], capture_output=True, text=True, timeout=300)
    return p, (tmp_path / f"report-{testid}" / "report.md")


# ---------------------------------------------------------------------------- 1. database faults
# kill on both servers (each recovers its own way: TiDB restarts, MariaDB runs crash recovery);
# the cut network once (our TCP proxy: what the client sees does not depend on the server
# behind it; tools/faults runs the whole matrix)
# and the cut network once with two threads in each VU (threads_per_vu=2: k6/x/tbs group), whose
# threads each lose their connection and reconnect while the VU's other thread waits or goes on
@pytest.mark.parametrize("target,kind,per_vu", [("tidb", "kill", "auto"), ("mariadb", "kill", "auto"), ("tidb", "drop", "auto"),
                                                ("mariadb", "drop", "2")])
def test_database_fault_mid_step_run_goes_on(sb, target, kind, per_vu, tmp_path):
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


def test_prometheus_unreachable_for_the_whole_run(sb, tmp_path):
    row = fs.prometheus_fault(sb, "unreachable", seconds=8)
    r = row["_run"]
    assert r.returncode == 0, r.output[-3000:]
    assert row["gap_s"] < 1 and row["wall_s"] <= 8 + fs.GRACE_S + fs.connect_s(4) + 4, row
    (st,) = r.summary["steps"]
    assert st["queries"]["total"] > 0
    # nothing reached any Prometheus: a report has nothing to read and says so (exit 3)
    p, _ = report(sb, r.testid, tmp_path)
    assert p.returncode == 3 and "has no data for testid" in p.stderr, p.stderr


def test_prometheus_missed_a_step_report_falls_back_to_k6s_summary(sb, tmp_path):
    row = fs.prometheus_fault(sb, "missed_step", seconds=6, threads=4)
    r = row["_run"]
    assert r.returncode == 0, r.output[-3000:]
    (t1, p1, k1), (t2, p2, k2) = row["totals"]
    assert p1 is None and p2 == k2, row["totals"]
    p, md = report(sb, r.testid, tmp_path)
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


# ---------------------------------------------------------------------------- 3. load generator faults
@pytest.mark.parametrize("sig,group", [(signal.SIGINT, True), (signal.SIGTERM, False)], ids=["ctrl-c", "sigterm"])
def test_signal_mid_step_writes_results_and_marks_the_interrupted_step(sb, sig, group, tmp_path):
    row = fs.interrupt(sb, sig, group, seconds=6)
    r = row["_run"]
    assert r.returncode != 0
    assert row["results_file"], r.output[-2000:]
    s = r.summary
    assert s["interrupted"] is True and s["run_end"]
    first, second = s["steps"]
    assert not first.get("interrupted") and first["elapsed_s"] >= 6
    assert second["interrupted"] is True and 0 < second["elapsed_s"] < 6, second
    # k6's own summary reached the terminal (no SIGPIPE from a tee killed by the same Ctrl-C)
    assert "INTERRUPTED" in r.output
    # no "[mysql] ... i/o timeout" line per interrupted statement (k6/driver/mysql quietLogger)
    assert "i/o timeout" not in r.output, r.output[-2000:]
    # the run_end marker reached Prometheus
    fs_deadline = time.time() + 15
    while time.time() < fs_deadline and not sb.prom(f'last_over_time(k6_oltp_marker{{testid="{r.testid}",event="run_end"}}[5m])'):
        time.sleep(1)
    assert sb.prom(f'last_over_time(k6_oltp_marker{{testid="{r.testid}",event="run_end"}}[5m])')
    p, md = report(sb, r.testid, tmp_path)
    assert p.returncode == 0, p.stderr
    text = md.read_text()
    assert "interrupted" in text
    assert f"the {second['threads']}-thread step was interrupted after {second['elapsed_s']:.1f} s of 6 s" in text, text


def _tmpfs(path, opts):
    path.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here to make a full or read-only disk: {p.stderr.strip()}")


@pytest.mark.parametrize("what", ["full", "read-only"])
def test_full_or_unwritable_results_dir_stops_before_any_query(sb, tmp_path, what):
    d = tmp_path / "results"
    _tmpfs(d, "size=1m" if what == "full" else "ro,size=1m")
    try:
        if what == "full":
            subprocess.run(["dd", "if=/dev/zero", f"of={d}/fill", "bs=64k"], capture_output=True)
        t0 = time.time()
        env = dict(os.environ, **sb.k6_env("tidb"))
        env["results_dir"] = str(d)
        p = subprocess.run([str(ROOT / "scripts/k6"), "run", "-e", "threads=2", "-e", "time=600", "oltp.js"],
                           cwd=ROOT / "k6", env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, p.stderr
        assert time.time() - t0 < 10
        assert f"error: results_dir {d} is not writable" in p.stderr, p.stderr
        assert "testid=" not in p.stdout + p.stderr  # k6 never started: no query was sent
        assert [x.name for x in d.iterdir()] == (["fill"] if what == "full" else [])
    finally:
        subprocess.run(["umount", str(d)], capture_output=True)


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


# ---------------------------------------------------------------------------- 5. the stack's service commands
def _fake_stack(tmp_path, **services):
    """A state folder whose pid files name processes of this test (never the real stack's)."""
    (tmp_path / "run").mkdir()
    procs = {}
    for name, script in services.items():
        procs[name] = subprocess.Popen(["bash", "-c", script], start_new_session=True)
        (tmp_path / "run" / f"{name}.pid").write_text(f"{procs[name].pid}\n")
    time.sleep(0.3)  # the traps are set
    return procs


def _stack(state, *args):
    return subprocess.run([str(ROOT / "scripts/stack"), *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TBS_STATE=str(state)))


def test_service_commands_name_a_bad_service_and_the_valid_ones(tmp_path):
    _fake_stack(tmp_path)
    for cmd in ("stop", "kill", "pause", "resume", "restart"):
        p = _stack(tmp_path, cmd, "oracle")
        assert p.returncode != 0 and "unknown service 'oracle' (valid: tidb, mariadb, " in p.stderr, p.stderr
        p = _stack(tmp_path, cmd)
        assert p.returncode != 0 and f"'{cmd}' needs a service (valid: tidb, mariadb, " in p.stderr, p.stderr
    p = _stack(tmp_path, "kill", "loki")
    assert p.returncode != 0 and "service 'loki' was not started by 'scripts/stack up'" in p.stderr, p.stderr


def test_kill_pause_resume_and_a_bounded_down(tmp_path):
    """kill is -9 at once and leaves the pid file (status: dead); pause and resume stop and
    continue the process (status: paused); down stops otelcol (the log shipper) first and a service that ignores
    SIGTERM after its bounded wait (5 s), and nothing `up` did not start."""
    stubborn = "trap '' TERM; while :; do sleep 0.1; done"
    procs = _fake_stack(tmp_path, otelcol=stubborn, node_exporter="sleep 300", loki="sleep 300", tidb="sleep 300")
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        p = _stack(tmp_path, "kill", "loki")
        assert p.returncode == 0, p.stderr
        assert procs["loki"].wait(timeout=5) == -signal.SIGKILL
        assert (tmp_path / "run/loki.pid").exists()
        assert _stack(tmp_path, "pause", "node_exporter").returncode == 0
        status = _stack(tmp_path, "status").stdout
        assert any(line.split()[:2] == ["node_exporter", "paused"] for line in status.splitlines()), status
        assert any(line.split()[:2] == ["loki", "dead"] for line in status.splitlines()), status
        assert _stack(tmp_path, "resume", "node_exporter").returncode == 0
        assert "node_exporter    up" in _stack(tmp_path, "status").stdout
        t0 = time.time()
        p = _stack(tmp_path, "down")
        took = time.time() - t0
        assert p.returncode == 0, p.stderr
        # it waited (bash counts whole seconds: 4-5 s) before the kill, and not much longer
        assert 4 <= took < 10, (took, p.stderr)
        assert "otelcol did not stop in 5s; killing it" in p.stderr, p.stderr
        order = [line.split("stopping ")[1].split()[0] for line in p.stderr.splitlines() if "stopping " in line]
        assert order == ["otelcol", "node_exporter", "tidb"], order
        for name in ("otelcol", "node_exporter", "tidb"):
            assert procs[name].wait(timeout=5) is not None
        assert not list((tmp_path / "run").glob("*.pid"))
        assert other.poll() is None  # not ours: untouched
    finally:
        other.kill()
        for p in procs.values():
            p.kill()
