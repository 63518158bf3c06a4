"""tools/bench in a tiny mode (a second or two per figure) against the local stack's real
TiDB, sysbench 1.0.20 and Prometheus: every figure's line is printed with numbers, with the
command and the conditions, and the database's CPU affinity is given back. A smoke test of
the benchmark, not a speed assertion: the figures themselves are not judged here, but every
verdict a line prints against its target (ok, SHORT) must be the one its printed figure gives, so
a SHORT is a figure that missed its target, never a verdict that was not computed."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, STATE

# quiet (conftest.py): tools/bench pins the shared TiDB to one core and measures pace and CPU
pytestmark = [pytest.mark.full, pytest.mark.quiet]

NUM = r"[-+]?\d+(?:\.\d+)?"
DB = "sbtest_bench_smoke"
TINY = ["--targets", "tidb", "--threads", "2", "--seconds", "1", "--rounds", "1", "--tables", "1",
        "--table-size", "1000", "--db", DB]


def bench(*args, timeout=600):
    return subprocess.run([str(ROOT / "tools/bench"), *args], capture_output=True, text=True, timeout=timeout)


def tidb_affinity():
    pid = int((STATE / "run/tidb.pid").read_text().split()[0])
    return {int(t): os.sched_getaffinity(int(t)) for t in os.listdir(f"/proc/{pid}/task")}


def assert_line(out, pattern):
    assert re.search(pattern, out, re.M), f"no line matching {pattern!r} in:\n{out}"


# Each verdict against a target: its pattern (the figure v, a median ratio or a growth, the
# target t when the line prints it, the verdict), the comparison, the target, and the decimals
# the figure is printed with.
VERDICTS = [
    (rf"^runs: .* threads: \S+ ours/sysbench (?P<v>{NUM}) .*targets \S+ >= 1\.0 (?P<verdict>ok|SHORT),", ">=", "1.0", 2),
    (rf"^runs: .*; p95 ours/sysbench (?P<v>{NUM}) .*p95 within one bucket \(<= (?P<t>{NUM})\) (?P<verdict>ok|SHORT)",
     "<=", None, 2),
    (rf"^floor: .*gofloor's (?P<v>{NUM}) .*target <= 1\.2 (?P<verdict>ok|SHORT)\)", "<=", "1.2", 2),
    (rf"^tax: .*remote write on/off (?P<v>{NUM}) .*\(target >= 0\.97: remote write (?P<verdict>ok|SHORT),", ">=", "0.97", 3),
    (rf"^tax: .*web dashboard on/off (?P<v>{NUM}) .*, dashboard (?P<verdict>ok|SHORT)\)", ">=", "0.97", 3),
    (rf"^setup: .*k6/sysbench: RSS (?P<v>{NUM})x.*?\(target <= 2x: (?P<verdict>ok|SHORT)\)", "<=", "2", 2),
    (rf"^setup: .*, set-up time (?P<v>{NUM})x.*?\(target <= 2x: (?P<verdict>ok|SHORT)\)", "<=", "2", 2),
    (rf"^soak-rss: .*growth (?P<v>{NUM})% \(target <= 10%: (?P<verdict>ok|SHORT)\)", "<=", "10", 1),
]


def verdicts(out):
    """[(line, printed verdict, the verdict of the printed figure)] of every verdict in out; None
    where the figure is within its rounding of the target (either verdict is then right)."""
    found = []
    for line in out.splitlines():
        for pattern, op, target, digits in VERDICTS:
            m = re.search(pattern, line)
            if not m:
                continue
            v, t = float(m["v"]), float(target if target is not None else m["t"])
            if abs(v - t) <= 0.5 * 10 ** -digits + 1e-9:
                right = None
            else:
                right = "ok" if (v >= t if op == ">=" else v <= t) else "SHORT"
            found.append((line, m["verdict"], right))
    return found


def assert_verdicts(out, count):
    """out holds `count` verdicts and each is its figure's (SHORT only for a missed target)."""
    found = verdicts(out)
    assert len(found) == count, f"{len(found)} verdicts, expected {count}: {found}"
    wrong = [f"{line}: prints {said}, its figure gives {right}" for line, said, right in found
             if right is not None and said != right]
    assert not wrong, "verdicts that are not their figures':\n" + "\n".join(wrong)


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench is not installed (apt-get install sysbench)")
def test_bench_prints_every_figure(stack):
    before = tidb_affinity()
    p = bench(*TINY, "--workloads", "oltp_point_select", "--figures", "runs,tax,scale,setup",
              "--scale-threads", "12", "--setup-threads", "3,5", "--setup-seconds", "1")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert_line(out, r"^command: tools/bench --targets tidb ")
    assert_line(out, rf"^setup: .*{NUM} cores, database threads on core 0, client on core 1, .*load average {NUM}")
    w = "oltp_point_select"  # one workload: tools/bench runs the list the same way for each
    assert_line(out, rf"^runs: tidb {w} 2 threads: QPS ours/sysbench {NUM} \[{NUM}-{NUM}\] \(sysbench {NUM}, ours {NUM}\); "
                     rf"p95 ours/sysbench {NUM} \[{NUM}-{NUM}\] \(sysbench {NUM} ms, ours {NUM} ms\); "
                     rf"CPU/query ours/sysbench {NUM} \[{NUM}-{NUM}\]")
    # the two clients' statements, told apart by schema, with exec counts and latencies on both sides
    assert_line(out, rf"^stmt: tidb {w} all: execs sysbench [1-9]\d* ours [1-9]\d*; .*mean ms sysbench {NUM} ours {NUM}; "
                     rf"plan-cache hits % sysbench {NUM} ours {NUM}")
    assert_line(out, rf"^floor: tidb oltp_point_select 2 threads: k6 CPU/query / gofloor's {NUM} \[{NUM}-{NUM}\]")
    assert_line(out, rf"^tax: tidb oltp_point_select 2 threads: QPS remote write on/off {NUM} \[{NUM}-{NUM}\], "
                     rf"web dashboard on/off {NUM} \[{NUM}-{NUM}\]")
    assert_line(out, rf"^prometheus-cpu: tidb: Prometheus' own CPU {NUM} s per minute of run with remote write, {NUM} s")
    # a run that pushed nothing would have 0 series
    assert_line(out, rf"^series: tidb {w} 3 steps .*: [1-9]\d* series with its testid")
    assert_line(out, rf"^storage: Prometheus data dir grew {NUM} MiB per hour of run with remote write")
    for prog in ("sysbench", "k6"):
        assert_line(out, rf"^scale: tidb {prog} 12 threads, 1 s: peak RSS {NUM} MiB \({NUM} KiB per thread\), CPU {NUM} s in all"
                         rf".*\({NUM} ms per thread\).* from process start to all 12 connected {NUM} s.*p95 {NUM} ms")
    assert_line(out, r"vus_ready 12$")
    assert_line(out, rf"^scale: tidb 12 threads k6/sysbench: RSS {NUM}x, CPU {NUM}x, QPS {NUM}x")
    # memory per thread and set-up time, both clients, at each thread count
    for n in (3, 5):
        assert_line(out, rf"^setup: tidb sysbench {n} threads: peak RSS {NUM} MiB, {NUM} MiB per thread; "
                         rf"from process start to the first measured second {NUM} s, {NUM} s of CPU \(all {n} connected {NUM} s\)$")
        assert_line(out, rf"^setup: tidb k6 {n} threads: peak RSS {NUM} MiB, {NUM} MiB per thread; "
                         rf"from process start to the first measured second {NUM} s, {NUM} s of CPU \(VUs initialized {NUM} s, "
                         rf"all {n} connected {NUM} s, connect phase at most {NUM} s; vus_ready {n}\)$")
        assert_line(out, rf"^setup: tidb {n} threads k6/sysbench: RSS {NUM}x \(target <= 2x: (ok|SHORT)\), "
                         rf"set-up time {NUM}x \(target <= 2x: (ok|SHORT)\), set-up CPU {NUM}x; 1 round\(s\), 1 s each "
                         rf"\(medians of each round's ratios\)$")
    assert_line(out, rf"^conditions: {NUM} s of bench; other processes used {NUM} of {NUM} cores on average -> (quiet|BUSY)")
    # runs 2, floor 1, tax 2, setup 2 at each of 3 and 5 threads
    assert_verdicts(out, 9)
    assert "--mysql-password" not in out
    # the server's threads have their affinity back (threads born meanwhile: the main thread's)
    after = tidb_affinity()
    main = before[min(before)]
    assert all(after[t] == before.get(t, main) for t in after), (before, after)


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench is not installed (apt-get install sysbench)")
def test_bench_soak_rss(stack):
    p = bench(*TINY, "--soak-rss", "--minutes", "0.1", "--soak-interval", "0.5")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert_line(out, rf"^soak-rss: tidb oltp_point_select 2 threads, 6 s at full speed \(QPS {NUM}, remote write on\), "
                     rf"RSS sampled every 0.5 s: mean {NUM} MiB over minute {NUM}-{NUM} \(\d+ samples\), {NUM} MiB over minute "
                     rf"{NUM}-{NUM} \(\d+\): growth {NUM}% \(target <= 10%: (ok|SHORT)\); RssAnon {NUM} -> {NUM} MiB, "
                     rf"RssFile {NUM} -> {NUM} MiB; peak {NUM} MiB")
    assert_verdicts(out, 1)
    assert_line(out, r"^conditions: ")


def test_bench_bad_input():
    for args, named in ((["--figures", "runs,speed"], "'speed'"), (["--targets", "postgres"], "'postgres'"),
                        (["--workloads", "oltp_nope"], "'oltp_nope'"), (["--pin-db", "1", "--pin-client", "1"], "1"),
                        (["--db", "other"], "'other'"), (["--setup-threads", "100,x"], "'100,x'"),
                        (["--k6-option", "threads_per_vux=2"], "'threads_per_vux=2'"),
                        (["--figures", "tpcc", "--tpcc-threads", "0"], "--tpcc-threads 0")):
        p = bench(*args, timeout=60)
        assert p.returncode != 0, (args, p.stdout)
        assert "error:" in p.stderr and named in p.stderr, (args, p.stderr)
        assert "command:" not in p.stdout  # stopped before any run


def test_bench_without_sysbench(tmp_path):
    # The same PATH without sysbench: the comparing figures stop early.
    for d in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for f in os.scandir(d):
            if f.name != "sysbench" and not (tmp_path / f.name).exists():
                (tmp_path / f.name).symlink_to(f.path)
    assert not shutil.which("sysbench", path=str(tmp_path))
    env = {**os.environ, "PATH": str(tmp_path)}
    p = subprocess.run([str(ROOT / "tools/bench"), "--figures", "runs", "--targets", "mariadb"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode != 0, p.stdout
    assert "error: sysbench is not installed" in p.stderr and "--figures tax" in p.stderr, p.stderr
    assert "command:" not in p.stdout
