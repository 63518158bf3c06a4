"""Issue 11, the faults that leave the stack's servers alone (tests/test_faults.py has those that
kill and stop them, alone): the network to a database cut by our TCP proxy mid-step, no
Prometheus at the remote-write address, Ctrl-C and SIGTERM to k6, a results folder that is full
or read-only, and `scripts/stack`'s service commands on a state folder of stand-in processes.
They run beside other tests: what they disturb is their own run (the faults' own database,
sbtest_faults; their own results folder; a proxy and a port of their own)."""
import os
import signal
import subprocess
import time

import pytest

from conftest import ROOT
from tbstools import faultkit as fs

import faultchecks as fc
from faultchecks import faults_box  # noqa: F401 (the fixture sb: the faults' own tables, every service running again at the end)

pytestmark = pytest.mark.full



# ---------------------------------------------------------------------------- 1. database faults
# the cut network (our TCP proxy: what the client sees does not depend on the server behind it;
# tools/faults runs the whole matrix), once with two threads in each VU (threads_per_vu=2:
# k6/x/tbs group), whose threads each lose their connection and reconnect while the VU's other
# thread waits or goes on
@pytest.mark.parametrize("target,kind,per_vu", [("tidb", "drop", "auto"), ("mariadb", "drop", "2")])
def test_database_fault_mid_step_run_goes_on(sb, target, kind, per_vu, tmp_path):
    fc.db_fault_run_goes_on(sb, target, kind, per_vu, tmp_path)


# ---------------------------------------------------------------------------- 2. observability faults
def test_prometheus_unreachable_for_the_whole_run(sb, tmp_path):
    row = fs.prometheus_fault(sb, "unreachable", seconds=8)
    r = row["_run"]
    assert r.returncode == 0, r.output[-3000:]
    assert row["gap_s"] < 1 and row["wall_s"] <= 8 + fs.GRACE_S + fs.connect_s(4) + 4, row
    (st,) = r.summary["steps"]
    assert st["queries"]["total"] > 0
    # nothing reached any Prometheus: a report has nothing to read and says so (exit 3)
    p, _ = fc.report(sb, r.testid, tmp_path)
    assert p.returncode == 3 and "has no data for testid" in p.stderr, p.stderr


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
    p, md = fc.report(sb, r.testid, tmp_path)
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
