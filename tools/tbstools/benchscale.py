"""tools/bench's figures about many threads: `scale` (k6 at 1,500 threads against sysbench at as many
threads: RSS, CPU, QPS, the time to connect them all) and `setup` (memory per thread and the time
from the process' start to the step's first measured second, at 100, 500 and 1,500 threads, for
both clients). The clients come as a Clients (tools/bench's run() and commands), the rest from
tbstools.benchkit.
"""
import statistics
import time

from dataclasses import dataclass
from typing import Callable

from tbstools import benchkit as bk
from tidbbench import contract

@dataclass(frozen=True)
class Clients:
    """How tools/bench runs the two clients (its pinning, sysbench's config file and its database
    are set up by its main): run(cmd, env, probe=, interval=) -> (output, wall s, CPU s, RSS),
    sysbench_cmd(target, workload, extra), k6_cmd(script, target, opts), k6_env()."""
    run: Callable
    sysbench_cmd: Callable
    k6_cmd: Callable
    k6_env: Callable


# issue 31's targets: k6's RSS and set-up time at most twice sysbench's
SETUP_TARGET = 2.0


# ---------------------------------------------------------------- scale


def connect_phase_ms(n):
    """The fixed connect phase of a k6 thread step of n threads, in ms (tidbbench.contract)."""
    return contract.connect_seconds(n) * 1000


def figure_scale(clients, target, a):
    n = a.scale_threads
    port = bk.PORTS[target]
    connect_ms = connect_phase_ms(n)
    res = {}
    for prog in ("sysbench", "k6"):
        seen = {"t_all": None, "max": 0, "t_max": None}
        t0 = time.time()

        def probe(pid, seen=seen, t0=t0):
            c = bk.connections_to(pid, port)
            if c > seen["max"]:
                seen["max"], seen["t_max"] = c, time.time() - t0
            if c >= n and seen["t_all"] is None:
                seen["t_all"] = time.time()
        if prog == "sysbench":
            cmd = clients.sysbench_cmd(target, "oltp_point_select", [f"--tables={a.tables}", f"--table-size={a.table_size}",
                                                               f"--threads={n}", f"--time={a.seconds}"])
            out, wall, cpu, rss = clients.run(cmd, probe=probe, interval=0.25)
            total, qps = bk.sysbench_queries(out)
            extra = f"; p95 {bk.sysbench_p95(out):.1f} ms"
        else:
            out, wall, cpu, rss = clients.run(clients.k6_cmd("oltp.js", target, {"tables": a.tables, "table_size": a.table_size,
                                                                     "threads": n, "time": a.seconds}), clients.k6_env(),
                                        probe=probe, interval=0.25)
            result = bk.k6_result(out)
            step = result["steps"][0]
            qps = step["qps"]
            # the first step's scenario starts when setup() returns (run_start)
            scen = (result.get("run_start") or step["window"]["step_start"] - connect_ms) / 1000
            since = f"{seen['t_all'] - scen:.1f} s" if seen["t_all"] else "n/a"
            step_cpu = step.get("client_cpu_s")
            extra = (f"; from the step's scenario start to all connected {since}, to the load's start "
                     f"{step['window']['step_start'] / 1000 - scen:.1f} s (connect phase at most {connect_ms / 1000:.0f} s); "
                     f"CPU during the measured step {step_cpu if step_cpu is not None else float('nan'):.1f} s, "
                     f"p95 {step['latency_ms']['pct_value']:.1f} ms; vus_ready {step.get('vus_ready')}")
        took = f"{seen['t_all'] - t0:.1f} s" if seen["t_all"] else \
            f"not seen (at most {seen['max']} at once, {seen['t_max'] or 0:.1f} s after start)"
        res[prog] = (rss, cpu, qps)
        print(f"scale: {target} {prog} {n} threads, {a.seconds} s: peak RSS {rss:.0f} MiB ({rss * 1024 / n:.0f} KiB per thread), "
              f"CPU {cpu:.1f} s in all: start-up, connections and load ({cpu / n * 1000:.1f} ms per thread), QPS {qps:.0f}; "
              f"from process start to all {n} connected {took}{extra}", flush=True)
    (sr, sc, sq), (kr, kc, kq) = res["sysbench"], res["k6"]
    print(f"scale: {target} {n} threads k6/sysbench: RSS {kr / sr:.1f}x, CPU {kc / sc:.1f}x, QPS {kq / sq:.2f}x", flush=True)


# ---------------------------------------------------------------- setup


def _connections_probe(port, n):
    """When all n connections were up, and the client's CPU seconds over time (samples)."""
    seen = {"t_all": None, "max": 0, "cpu": []}

    def probe(pid):
        seen["cpu"].append((time.time(), bk.process_cpu_seconds(pid)))
        if seen["t_all"] is not None:
            return
        c = bk.connections_to(pid, port)
        seen["max"] = max(seen["max"], c)
        if c >= n:
            seen["t_all"] = time.time()
    return seen, probe


def cpu_at(seen, t):
    """The client's CPU seconds at time t: the last sample taken at or before it (every 0.1 s)."""
    before = [c for at, c in seen["cpu"] if at <= t]
    return before[-1] if before else 0.0


def setup_sysbench(clients, target, a, n):
    """sysbench oltp_point_select at n threads: (peak RSS MiB, set-up s, all connected s or None).
    Set-up: from the process' start to "Threads started!", which sysbench prints when every
    thread has connected and prepared its statements (thread_init) and the barrier lets them go:
    its timer starts there (line-buffered stdout through stdbuf, timed as each line arrives)."""
    seen, probe = _connections_probe(bk.PORTS[target], n)
    started = {}

    def line(text, at):
        if "started" not in started and text.startswith("Threads started!"):
            started["started"] = at
    cmd = ["stdbuf", "-oL", *clients.sysbench_cmd(target, "oltp_point_select", [
        f"--tables={a.tables}", f"--table-size={a.table_size}", f"--threads={n}", f"--time={a.setup_seconds}"])]
    t0 = time.time()
    out, _, _, rss = clients.run(cmd, probe=probe, interval=0.1, on_line=line)
    if "started" not in started:
        raise SystemExit(f"error: sysbench printed no 'Threads started!' line:\n{out[-2000:]}")
    return (rss, started["started"] - t0, (seen["t_all"] - t0) if seen["t_all"] else None,
            cpu_at(seen, started["started"]))


def setup_k6(clients, target, a, n):
    """our k6 (oltp.js) at n threads: (peak RSS MiB, set-up s, all connected s or None, VU init s).
    Set-up: from the process' start to the step's measure_start (results JSON, epoch ms); VU
    init: to the run's start (setup(), which k6 runs once every VU is initialized)."""
    seen, probe = _connections_probe(bk.PORTS[target], n)
    t0 = time.time()
    out, _, _, rss = clients.run(clients.k6_cmd("oltp.js", target, {"tables": a.tables, "table_size": a.table_size, "threads": n,
                                                        "time": a.setup_seconds}), clients.k6_env(), probe=probe, interval=0.1)
    res = bk.k6_result(out)
    step = res["steps"][0]
    run_start = res.get("run_start") or (step["window"]["step_start"] - connect_phase_ms(n))
    return (rss, step["window"]["measure_start"] / 1000 - t0, (seen["t_all"] - t0) if seen["t_all"] else None,
            run_start / 1000 - t0, step.get("vus_ready"), cpu_at(seen, step["window"]["measure_start"] / 1000))


def figure_setup(clients, target, a):
    """Memory per thread and set-up time of both clients at each of --setup-threads, --setup-rounds
    rounds. A round runs the two clients back to back, sysbench first in odd rounds and k6 first in
    even ones; the ratios are the median of the rounds' own ratios, with their range: this host's
    CPU speed moves between runs by more than a change to k6 does, and two runs a few seconds apart
    share it (docs/bench.md). The clients' lines give medians of their own figures."""
    f = lambda s: "not seen" if s is None else f"{s:.1f} s"  # noqa: E731
    for n in a.setup_threads:
        sb, k6 = [], []
        for r in range(a.setup_rounds):
            if r % 2 == 0:
                sb.append(setup_sysbench(clients, target, a, n))
                k6.append(setup_k6(clients, target, a, n))
            else:
                k6.append(setup_k6(clients, target, a, n))
                sb.append(setup_sysbench(clients, target, a, n))
        median_of = lambda rows, i: statistics.median(r[i] for r in rows) if all(r[i] is not None for r in rows) else None  # noqa: E731
        s_rss, s_set, s_all, s_cpu = median_of(sb, 0), median_of(sb, 1), median_of(sb, 2), median_of(sb, 3)
        k_rss, k_set, k_all, k_init, k_cpu = median_of(k6, 0), median_of(k6, 1), median_of(k6, 2), median_of(k6, 3), median_of(k6, 5)
        ready = min(r[4] or 0 for r in k6)
        print(f"setup: {target} sysbench {n} threads: peak RSS {s_rss:.0f} MiB, {s_rss / n:.2f} MiB per thread; "
              f"from process start to the first measured second {s_set:.1f} s, {s_cpu:.2f} s of CPU "
              f"(all {n} connected {f(s_all)})", flush=True)
        print(f"setup: {target} k6 {n} threads: peak RSS {k_rss:.0f} MiB, {k_rss / n:.2f} MiB per thread; "
              f"from process start to the first measured second {k_set:.1f} s, {k_cpu:.2f} s of CPU (VUs initialized "
              f"{k_init:.1f} s, all {n} connected {f(k_all)}, connect phase at most {connect_phase_ms(n) / 1000:.0f} s; "
              f"vus_ready {ready})", flush=True)

        def ratio(ki, si):
            rs = sorted(k[ki] / max(s[si], 0.01) for k, s in zip(k6, sb))
            spread = f" [{rs[0]:.2f}-{rs[-1]:.2f}]" if len(rs) > 1 else ""
            return statistics.median(rs), spread
        (rr, rr_s), (rs, rs_s), (rc, rc_s) = ratio(0, 0), ratio(1, 1), ratio(5, 3)
        print(f"setup: {target} {n} threads k6/sysbench: RSS {rr:.2f}x{rr_s} (target <= {SETUP_TARGET:g}x: "
              f"{bk.verdict(rr <= SETUP_TARGET)}), set-up time {rs:.2f}x{rs_s} (target <= {SETUP_TARGET:g}x: "
              f"{bk.verdict(rs <= SETUP_TARGET)}), set-up CPU {rc:.2f}x{rc_s}; "
              f"{a.setup_rounds} round(s), {a.setup_seconds} s each (medians of each round's ratios)", flush=True)
