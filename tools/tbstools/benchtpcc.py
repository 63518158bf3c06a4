"""tools/bench's TPC-C cells (issue #46 item 5): our k6/tpcc.js against go-tpc v1.0.7's own CLI
(bin/go-tpc, scripts/build gotpc), the reference, on the same server, warehouses and threads,
alternating, several rounds (medians of each round's ratios, with their range):

  tpcc-prepare  rows/s of prepare (both without their prepare check: go-tpc's --no-check, our
                no_check; the rows counted in the nine tables afterwards, over the process' wall
                time, start-up included), the client on its core and the server on every core,
                as the OLTP prepare cell; target: ours at least 0.9x go-tpc's.
  tpcc-run      client CPU per transaction: go-tpc's whole process (wait4's rusage, start-up and
                connections included: a few milliseconds) over the transactions its summary counts;
                ours, the step's client_cpu_s (k6's own CPU over the measured window) over the
                step's transactions; the server on one core, the client on another. Target: ours
                at most 1.2x go-tpc's. tpmTotal of both beside it.

Each tool prepares and runs on a database of its own (<db>_tpcc, ours; <db>_tpcc_gt, go-tpc's),
made afresh each round. go-tpc takes a password only as an argument, which the house rules
forbid: it connects as a user without a password (GOTPC_USER) that reaches its database only,
made by the target's root for the figure and dropped afterwards."""
import os
import re
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tbstools import benchkit as bk
from tbstools.benchkit import PORTS, k6_result, verdict

ROOT = Path(__file__).resolve().parents[2]
GOTPC = ROOT / "bin/go-tpc"
GOTPC_USER = "tbs_bench_gotpc"
TABLES = ["item", "customer", "district", "history", "new_order", "order_line", "orders", "stock", "warehouse"]
PREPARE_TARGET, CPU_TARGET = 0.9, 1.2  # issue #46 item 5
# go-tpc's end-of-run summary, one line per transaction type (its _ERR lines count failures)
SUMMARY = re.compile(r"^\[Summary\] ([A-Z_]+?)\s+- Takes\(s\): [\d.]+, Count: (\d+),", re.M)


@dataclass(frozen=True)
class Clients:
    """How tools/bench runs a client (its pinning and environment, set up by its main):
    run(cmd, env) -> (output, wall s, CPU s, RSS), k6_cmd(script, target, opts, db=),
    k6_env(prepare=), go_env(env), pin(target) and unpin(): the server on its core, and back."""
    run: Callable
    k6_cmd: Callable
    k6_env: Callable
    go_env: Callable
    pin: Callable
    unpin: Callable


def gotpc_transactions(out):
    """Committed transactions in go-tpc's summary: the five types' counts, without the _ERR lines."""
    counts = {name: int(n) for name, n in SUMMARY.findall(out) if not name.endswith("_ERR")}
    if not counts:
        raise SystemExit(f"error: go-tpc printed no [Summary] lines:\n{out[-2000:]}")
    return sum(counts.values())


def root_cmd(state, target):
    """The `mariadb` client as the target's root: TiDB's with the stack's generated password (in
    MYSQL_PWD, never an argument), MariaDB's through its socket."""
    if target == "tidb":
        pw = (state / "secrets/tidb-root").read_text().strip()
        return ["mariadb", "--protocol=tcp", "-h127.0.0.1", f"-P{PORTS[target]}", "-uroot"], bk.sql_env(pw)
    return ["mariadb", f"--socket={state / 'run/mariadb.sock'}", "-uroot"], dict(os.environ)


def as_root(state, target, stmt):
    cmd, env = root_cmd(state, target)
    p = subprocess.run([*cmd, "-N", "-B", "-e", stmt], capture_output=True, text=True, env=env, timeout=120)
    if p.returncode:
        raise SystemExit(f"error: {target} as root: {stmt[:80]}: {p.stderr.strip()}")
    return p.stdout


def fresh(state, target, db, host="127.0.0.1"):
    """An empty `db`, which only it and the passwordless GOTPC_USER (made here) reach."""
    as_root(state, target, f"DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}; "
                           f"CREATE USER IF NOT EXISTS '{GOTPC_USER}'@'{host}'; "
                           f"GRANT ALL PRIVILEGES ON {db}.* TO '{GOTPC_USER}'@'{host}'")


def rows(state, target, db):
    out = as_root(state, target, "SELECT " + " + ".join(f"(SELECT COUNT(*) FROM {db}.{t})" for t in TABLES))
    return int(out.strip())


def gotpc_cmd(target, db, warehouses, threads, *args):
    return [str(GOTPC), "tpcc", "-H", "127.0.0.1", "-P", str(PORTS[target]), "-U", GOTPC_USER, "-D", db,
            "--warehouses", str(warehouses), "-T", str(threads), *args]


def one_round(clients, state, target, a, dbs, gotpc_first):
    """One round of both tools: prepare rows/s, then client CPU per transaction and tpmTotal."""
    w, n, secs = a.tpcc_warehouses, a.tpcc_threads, a.tpcc_seconds
    ours = {"warehouses": w, "threads": n}
    out = {}
    for tool in (["gotpc", "ours"] if gotpc_first else ["ours", "gotpc"]):
        fresh(state, target, dbs[tool])
        if tool == "gotpc":
            _, wall, _, _ = clients.run(gotpc_cmd(target, dbs[tool], w, n, "prepare", "--no-check"), dict(os.environ))
        else:
            _, wall, _, _ = clients.run(clients.k6_cmd("tpcc.js", target, {**ours, "tpcc_command": "prepare", "no_check": "true"},
                                                       db=dbs[tool]), clients.k6_env(prepare=True))
        out[f"{tool}_rows_s"] = rows(state, target, dbs[tool]) / wall
    clients.pin(target)
    try:
        for tool in (["gotpc", "ours"] if gotpc_first else ["ours", "gotpc"]):
            if tool == "gotpc":
                o, _, cpu, _ = clients.run(gotpc_cmd(target, dbs[tool], w, n, "run", "--time", f"{secs}s"),
                                           clients.go_env(dict(os.environ)))
                txns = gotpc_transactions(o)
                out["gotpc_cpu"], out["gotpc_tpm"] = cpu / txns, txns * 60 / secs
            else:
                o, _, _, _ = clients.run(clients.k6_cmd("tpcc.js", target, {**ours, "time": secs}, db=dbs[tool]),
                                         clients.k6_env())
                (step,) = k6_result(o)["steps"]
                out["ours_cpu"], out["ours_tpm"] = step["client_cpu_s"] / step["transactions"], step["tpmTotal"]
    finally:
        clients.unpin()
    return out


def figure_tpcc(clients, state, target, a):
    """The tpcc-prepare and tpcc-run lines of `target`, over a.rounds rounds (go-tpc first in odd rounds)."""
    if not GOTPC.exists():
        raise SystemExit(f"error: {GOTPC} is missing (go-tpc v1.0.7's CLI, the TPC-C reference): scripts/build gotpc")
    dbs = {"ours": f"{a.db}_tpcc", "gotpc": f"{a.db}_tpcc_gt"}
    rounds = []
    try:
        for i in range(a.rounds):
            rounds.append(one_round(clients, state, target, a, dbs, gotpc_first=i % 2 == 0))
    finally:
        as_root(state, target, f"DROP DATABASE IF EXISTS {dbs['ours']}; DROP DATABASE IF EXISTS {dbs['gotpc']}; "
                               f"DROP USER IF EXISTS '{GOTPC_USER}'@'127.0.0.1'")
    med = lambda k: statistics.median(r[k] for r in rounds)  # noqa: E731
    prep = [r["ours_rows_s"] / r["gotpc_rows_s"] for r in rounds]
    cpu = [r["ours_cpu"] / r["gotpc_cpu"] for r in rounds]
    tpm = [r["ours_tpm"] / r["gotpc_tpm"] for r in rounds]
    w, n = a.tpcc_warehouses, a.tpcc_threads
    print(f"tpcc-prepare: {target} {w} warehouses, {n} threads: rows/s ours/go-tpc {bk.fmt_spread(prep)} "
          f"(go-tpc {med('gotpc_rows_s'):.0f}, ours {med('ours_rows_s'):.0f}; target >= {PREPARE_TARGET}: "
          f"{verdict(statistics.median(prep) >= PREPARE_TARGET)})", flush=True)
    print(f"tpcc-run: {target} {w} warehouses, {n} threads, {a.tpcc_seconds} s: client CPU/transaction ours/go-tpc "
          f"{bk.fmt_spread(cpu)} (go-tpc {med('gotpc_cpu') * 1e3:.3f} ms, ours {med('ours_cpu') * 1e3:.3f} ms; "
          f"target <= {CPU_TARGET}: {verdict(statistics.median(cpu) <= CPU_TARGET)}); tpmTotal ours/go-tpc "
          f"{bk.fmt_spread(tpm)} (go-tpc {med('gotpc_tpm'):.0f}, ours {med('ours_tpm'):.0f})", flush=True)
