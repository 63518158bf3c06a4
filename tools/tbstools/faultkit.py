"""Fault injection for tidb-bench-stack (tools/faults, tests/test_faults.py) on the running
local stack: the faults are made with the stack's own service commands (`scripts/stack
kill|stop|restart SERVICE`: the stack is the one code that starts servers), a network cut with
a TCP proxy of ours in front of a database, and k6 runs through scripts/k6 exactly as a user
runs it. The runs use a database of their own (sbtest_faults) and a results folder of their own.

    sb = Stack(Path("/tmp/x"))
    run = sb.k6_run("tidb", {"threads": 4, "time": 20}, faults=[At(6, sb.kill, "tidb"), At(11, sb.start, "tidb")])
    sb.close()   # restarts every service a fault left stopped

A fault stops a server other users of the stack share: run them when nobody benchmarks.

Secrets: the stack's password (.stack/secrets/sbtest) reaches k6 and the SQL client in the
environment (never as an argument), sysbench in a mode-600 config file.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("TBS_STATE", ROOT / ".stack"))
STACK = ROOT / "scripts/stack"
HOST = "127.0.0.1"
DB = "sbtest_faults"  # the faults' own database on the stack's targets (the sbtest user owns sbtest*)
# the services a fault may stop (scripts/stack's names), each restarted by close() if left down
SERVICES = ("tidb", "mariadb", "prometheus", "loki", "promtail")


def stack_ports():
    """The local stack's ports (runtime/stack.json's ports.local, as scripts/stack reads them)."""
    return json.loads((ROOT / "runtime/stack.json").read_text())["ports"]["local"]


def read_env_file(path):
    """KEY=value lines (# comments), as scripts/k6 reads .stack/k6.env."""
    out = {}
    for line in Path(path).read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out

def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def http_ok(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def http_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def proc_rss_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def proc_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def tcp_connections(pid=None, port=None):
    """Established TCP connections of a process (by pid) or to a local port."""
    args = ["ss", "-tnpH", "state", "established"]
    out = subprocess.run(args, capture_output=True, text=True).stdout.splitlines()
    n = 0
    for line in out:
        if pid is not None and f"pid={pid}," not in line:
            continue
        if port is not None and not re.search(rf"\s{re.escape(HOST)}:{port}\s", line + " "):
            continue
        n += 1
    return n


def k6_child(pid, timeout=10):
    """The k6 process under scripts/k6 (bash runs it, piped into tee)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                st = (p / "stat").read_text()
                ppid = int(st.rsplit(")", 1)[1].split()[1])
                argv = (p / "cmdline").read_bytes().split(b"\0")
                if ppid == pid and len(argv) > 1 and argv[1] == b"run":
                    return int(p.name)
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.1)
    return 0


class CutProxy:
    """A TCP proxy on 127.0.0.1 in front of a server. drop(seconds) is a network failure:
    every connection through it is cut at once and new ones are refused (the listening socket
    is closed) for that long, then it listens again on the same port."""

    def __init__(self, target_port):
        self.target = target_port
        self.port = free_port()
        self.pairs = []
        self.lock = threading.Lock()
        self.srv = None
        self.closed = False
        self._listen()

    def _listen(self):
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind((HOST, self.port))
        self.srv.listen(512)
        threading.Thread(target=self._accept, args=(self.srv,), daemon=True).start()

    def _accept(self, srv):
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            try:
                u = socket.create_connection((HOST, self.target), timeout=5)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.pairs.append((c, u))
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for c, u in pairs:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass
        return len(pairs)

    def refuse(self):
        # shutdown wakes the thread blocked in accept(); a bare close() would leave the
        # listening socket alive (and accepting) under it
        try:
            self.srv.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.srv.close()

    def listen(self):
        if not self.closed:
            self._listen()

    def drop(self, seconds):
        self.refuse()
        n = self.cut()
        time.sleep(seconds)
        self.listen()
        return n

    def close(self):
        self.closed = True
        self.refuse()
        self.cut()


@dataclass
class At:
    """A fault action at `t` seconds after the run's measured window starts."""
    t: float
    fn: object
    args: tuple = ()
    name: str = ""

    def __init__(self, t, fn, *args, name=""):
        self.t, self.fn, self.args = t, fn, args
        self.name = name or f"{getattr(fn, '__name__', 'action')} {' '.join(map(str, args))}".strip()


@dataclass
class RunResult:
    returncode: int
    output: str
    testid: str
    summary: dict
    started: float  # epoch s when the run's first step began (from the manifest when known)
    ended: float  # epoch s when the k6 process ended
    events: list = field(default_factory=list)  # [(epoch s, name)] of the fault actions
    samples: list = field(default_factory=list)  # resource samples (soak)
    k6_pid: int = 0

    def event_time(self, name):
        return next(t for t, n in self.events if n.startswith(name))


class Stack:
    """The running local stack (scripts/stack up --target both), driven by its own commands."""

    def __init__(self, base, services=SERVICES):
        self.base = Path(base)
        self.base.mkdir(parents=True, exist_ok=True)
        os.chmod(self.base, 0o700)
        self.results = self.base / "results"
        self.results.mkdir(exist_ok=True)
        env_file = STATE / "k6.env"
        if not env_file.exists():
            raise RuntimeError(f"{env_file} is missing: start the local stack first (scripts/stack up --target both)")
        self.env = read_env_file(env_file)
        self.password = (STATE / "secrets/sbtest").read_text().strip()
        self.ports = stack_ports()
        self.services = tuple(services)
        self.proxies = []
        self.k6_log = Path(self.env.get("TBS_LOG_DIR", STATE / "logs")) / "k6.log"
        missing = [s for s in self.services if not self.pid(s)]
        if missing:
            raise RuntimeError(f"the local stack's {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not running: "
                               "start it with scripts/stack up --target both (scripts/stack status shows what runs)")

    # ------------------------------------------------------------------ control: scripts/stack SERVICE commands
    def pid(self, name):
        """The pid of the stack's running service, or 0."""
        try:
            pid = int((STATE / "run" / f"{name}.pid").read_text().split()[0])
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            return 0 if state == "Z" else pid  # a killed server waits as a zombie until init reaps it
        except (OSError, ValueError, IndexError):
            return 0

    def _stack(self, *args):
        p = subprocess.run([str(STACK), *args], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"scripts/stack {' '.join(args)} failed: {p.stderr.strip()[-2000:]}")

    def start(self, name):
        """Started again (and ready) when it is not running: scripts/stack restart."""
        if not self.pid(name):
            self._stack("restart", name)

    def kill(self, name):
        self._stack("kill", name)

    def stop(self, name):
        self._stack("stop", name)

    def pause(self, name):
        self._stack("pause", name)

    def resume(self, name):
        self._stack("resume", name)

    def proxy(self, target):
        p = CutProxy(self.ports[target])
        self.proxies.append(p)
        return p

    def close(self):
        """Closes the proxies; every service a fault left stopped runs again."""
        for p in self.proxies:
            p.close()
        self.proxies = []
        for s in self.services:
            self.start(s)

    def url(self, name):
        return f"http://{HOST}:{self.ports[name]}"

    # ------------------------------------------------------------------ SQL (mariadb client, password in the environment)
    def sql(self, target, query, db=DB):
        argv = ["mariadb", "--protocol=tcp", "-h", HOST, "-P", str(self.ports[target]), "-usbtest", "-N", "-B"]
        if db:
            argv.append(db)
        p = subprocess.run(argv, input=query, env=dict(os.environ, MYSQL_PWD=self.password),
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"{target}: {query[:80]}: {p.stderr.strip()}")
        return [line.split("\t") for line in p.stdout.splitlines()]

    # ------------------------------------------------------------------ Prometheus
    def prom(self, query, at=None):
        params = {"query": query}
        if at is not None:
            params["time"] = f"{at:.3f}"
        body = http_json(f"{self.url('prometheus')}/api/v1/query?" + urllib.parse.urlencode(params))
        if body.get("status") != "success":
            raise RuntimeError(f"{query}: {body}")
        return body["data"]["result"]

    def prom_value(self, query, at=None):
        r = self.prom(query, at)
        return float(r[0]["value"][1]) if r else None

    def queries_at(self, testid, t):
        """k6's cumulative measured query count at epoch second t, as Prometheus had it."""
        # (k6 pushes a series only when it moved: while no event completes there is no sample,
        # and the last one before is the count)
        return self.prom_value(f'sum(last_over_time(k6_oltp_queries_total{{testid="{testid}",warmup="false"}}[30s]))', t)

    def step_total(self, testid, step, metric="k6_oltp_queries_total"):
        w = step["window"]
        at = (w["measure_end"] + 6000) / 1000
        rng = int(w["measure_end"] + 6000 - w["measure_start"])
        sel = f'testid="{testid}",threads="{step["threads"]}",warmup="false"'
        return self.prom_value(f"sum(max_over_time({metric}{{{sel}}}[{rng}ms]))", at)

    # ------------------------------------------------------------------ Loki
    def loki_lines(self, selector, start, end):
        """The non-empty log lines (trailing blanks stripped) Loki holds for a stream selector
        between two epoch seconds, each with how often it is there."""
        t0, t1 = int(start * 1e9), int(end * 1e9)
        seen = set()
        while True:
            q = urllib.parse.urlencode({"query": selector, "start": str(t0), "end": str(t1), "limit": "5000",
                                        "direction": "forward"})
            body = http_json(f"{self.url('loki')}/loki/api/v1/query_range?{q}")
            vals = [(v[0], v[1], json.dumps(s["stream"], sort_keys=True))
                    for s in body["data"]["result"] for v in s["values"]]
            new = [v for v in vals if v not in seen]
            seen.update(new)
            if not new or len(vals) < 5000:
                return Counter(v[1].rstrip() for v in seen if v[1].strip())
            t0 = max(int(v[0]) for v in vals)

    def loki_count(self, selector, start, end):
        """Non-empty log lines Loki holds for a stream selector between two epoch seconds."""
        return sum(self.loki_lines(selector, start, end).values())

    # ------------------------------------------------------------------ k6
    def k6_env(self, target, port=None, prometheus=True):
        """The environment scripts/k6 gets: the stack's .stack/k6.env (remote write, password),
        the target's port (or the proxy's), the faults' database and results folder."""
        e = dict(self.env)
        e.update({"mysql_host": HOST, "mysql_port": str(port or self.ports[target]), "mysql_db": DB,
                  "results_dir": str(self.results), "K6_LOG_FORMAT": "raw"})
        if prometheus is None:
            e["K6_OUT"] = ""
        elif isinstance(prometheus, str):  # an address nothing answers on, or another Prometheus
            e["K6_PROMETHEUS_RW_SERVER_URL"] = f"{prometheus}/api/v1/write"
            e["TBS_PROMETHEUS_URL"] = prometheus
        return e

    def prepare(self, target, tables=2, table_size=2000):
        """The faults' tables in their own database (sbtest_faults), made afresh."""
        self.sql(target, f"CREATE DATABASE IF NOT EXISTS {DB}", db=None)
        p = subprocess.run([str(ROOT / "scripts/k6"), "run", "-e", f"tables={tables}", "-e", f"table_size={table_size}",
                            "-e", "recreate=true", "prepare.js"], cwd=ROOT / "k6",
                           env=dict(os.environ, **self.k6_env(target, prometheus=None)),
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"prepare on {target} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")

    def k6_run(self, target, options, faults=(), port=None, prometheus=True, timeout=600, signal_at=None,
               sample_every=None, sample_pids=None):
        """scripts/k6 run ... oltp.js against the stack; `faults` ([At]) fire at their time after
        the first step's measured window starts (approximately: k6 prints its testid when setup
        ends, the step starts right after). signal_at=(seconds, signal) sends a signal to k6."""
        threads = int(str(options.get("threads", 1)).split(",")[0])
        args = [str(ROOT / "scripts/k6"), "run"]
        for k, v in options.items():
            args += ["-e", f"{k}={v}"]
        args.append("oltp.js")
        e = dict(os.environ, **self.k6_env(target, port=port, prometheus=prometheus))
        proc = subprocess.Popen(args, cwd=ROOT / "k6", env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        lines, events, samples = [], [], []
        t_start = threading.Event()
        state = {"t0": None}

        def read():
            for line in proc.stdout:
                lines.append(line)
                if state["t0"] is None and "testid=" in line:
                    state["t0"] = time.time() + connect_s(threads)
                    t_start.set()
            t_start.set()
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        t_start.wait(timeout=120)
        pid_box = {}

        def k6_pid():
            if "pid" not in pid_box:
                pid_box["pid"] = k6_child(proc.pid)
            return pid_box["pid"]
        errors = []

        def measure_start():
            """The first step's measured window starts at the value of its measure_start marker,
            which reaches Prometheus within a push interval; without Prometheus, an estimate."""
            m = re.search(r"testid=(\S+)", "".join(lines))
            if m and prometheus is True and self.pid("prometheus"):
                q = f'max(last_over_time(k6_oltp_marker{{testid="{m.group(1)}",event="measure_start"}}[1m]))'
                deadline = time.time() + 5
                while time.time() < deadline and proc.poll() is None:
                    try:
                        v = self.prom_value(q)
                    except (OSError, RuntimeError):
                        v = None
                    if v:
                        return v / 1000
                    time.sleep(0.2)
            return state["t0"] + 1.0  # (measured: the step starts about 1 s after connect_s)

        def fire():
            if state["t0"] is not None:
                state["t0"] = measure_start()
            actions = list(faults)
            if signal_at:
                t, sig, group = (tuple(signal_at) + (False,))[:3]
                send = (lambda: os.killpg(proc.pid, sig)) if group else (lambda: os.kill(k6_pid() or proc.pid, sig))
                actions.append(At(t, send, name=f"signal {signal.Signals(sig).name}"))
            for a in sorted(actions, key=lambda a: a.t):
                if state["t0"] is None:
                    return
                delay = state["t0"] + a.t - time.time()
                if delay > 0:
                    time.sleep(delay)
                if proc.poll() is not None:
                    return
                events.append((time.time(), a.name))
                try:
                    a.fn(*a.args)
                except Exception as ex:  # noqa: BLE001 - reported with the result
                    errors.append(f"{a.name}: {ex}")
                events.append((time.time(), a.name + " done"))
        firer = threading.Thread(target=fire, daemon=True)
        firer.start()

        def sample():
            # the k6 process is the one holding the connections to the database (found by ss)
            pid = 0
            db_port = port or self.ports[target]
            while proc.poll() is None and not pid:
                out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True).stdout
                owners = re.findall(rf"\S+\s+{re.escape(HOST)}:{db_port}\s+users:\(\(\"k6\",pid=(\d+),", out)
                pid = int(max(set(owners), key=owners.count)) if owners else 0
                if not pid:
                    time.sleep(0.5)
            pid_box["pid"] = pid
            while proc.poll() is None and pid:
                row = {"t": time.time(), "k6_rss_kb": proc_rss_kb(pid), "k6_fds": proc_fds(pid),
                       "k6_conns": tcp_connections(pid=pid)}
                for name, spid in (sample_pids or {}).items():
                    spid = spid() if callable(spid) else spid
                    row[f"{name}_rss_kb"] = proc_rss_kb(spid)
                    row[f"{name}_fds"] = proc_fds(spid)
                samples.append(row)
                time.sleep(sample_every)
        if sample_every:
            threading.Thread(target=sample, daemon=True).start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        ended = time.time()
        reader.join(timeout=10)
        firer.join(timeout=120)
        out = "".join(lines)
        m = re.search(r"testid=(\S+)", out)
        testid = m.group(1) if m else ""
        summary = {}
        if testid and (self.results / f"{testid}.json").exists():
            summary = json.loads((self.results / f"{testid}.json").read_text())
        started = state["t0"] or ended
        if summary.get("steps"):
            started = summary["steps"][0]["window"]["measure_start"] / 1000
        if errors:
            out += "\n[fault harness] " + "; ".join(errors)
        return RunResult(proc.returncode, out, testid, summary, started, ended, events, samples, pid_box.get("pid", 0))

    # ------------------------------------------------------------------ sysbench 1.0.20, same target
    def sysbench_run(self, target, workload, threads, seconds, ignore_errors, faults=(), tables=2, table_size=2000,
                     port=None, extra=()):
        """sysbench <workload> run on the same tables, with --report-interval=1; the password in a
        mode-600 --config-file. Returns (returncode, output, events, t0)."""
        cfg = self.base / "sysbench.cfg"
        fd = os.open(cfg, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, f"mysql-password={self.password}\n".encode())
        os.close(fd)
        args = ["sysbench", f"--config-file={cfg}", workload, f"--mysql-host={HOST}",
                f"--mysql-port={port or self.ports[target]}", "--mysql-user=sbtest", f"--mysql-db={DB}",
                f"--tables={tables}", f"--table-size={table_size}", f"--threads={threads}", f"--time={seconds}",
                "--report-interval=1", f"--mysql-ignore-errors={ignore_errors}", *extra, "run"]
        if shutil.which("sysbench") is None:
            return None
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        t0 = time.time()
        events = []

        def fire():
            for a in sorted(faults, key=lambda a: a.t):
                delay = t0 + a.t - time.time()
                if delay > 0:
                    time.sleep(delay)
                if proc.poll() is not None:
                    return
                events.append((time.time(), a.name))
                a.fn(*a.args)
                events.append((time.time(), a.name + " done"))
        firer = threading.Thread(target=fire, daemon=True)
        firer.start()
        try:
            out, _ = proc.communicate(timeout=seconds + 120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        ended = time.time()
        firer.join(timeout=120)
        return SysbenchResult(proc.returncode, out, t0, ended, events)


@dataclass
class SysbenchResult:
    returncode: int
    output: str
    started: float
    ended: float
    events: list

    def intervals(self):
        """[(second, qps)] from the --report-interval lines."""
        return [(float(m.group(1)), float(m.group(2)))
                for m in re.finditer(r"^\[ (\d+)s \] thds: \d+ tps: [\d.]+ qps: ([\d.]+)", self.output, re.M)]

    def total(self, what):
        m = re.search(rf"^\s+{what}:\s+(\d+)", self.output, re.M)
        return int(m.group(1)) if m else None

    def reconnects(self):
        m = re.search(r"reconnects:\s+(\d+)", self.output)
        return int(m.group(1)) if m else None

    def errors(self):
        m = re.search(r"ignored errors:\s+(\d+)", self.output)
        return int(m.group(1)) if m else None

    def longest_gap(self):
        """Longest run of report seconds with qps 0 (or missing seconds before the end)."""
        best = cur = 0
        last = 0
        for sec, qps in self.intervals():
            cur = cur + (sec - last) if qps == 0 else 0
            best = max(best, cur)
            last = sec
        return best


# ====================================================================== scenarios
# Each returns a dict of figures (one row of tools/faults' table) and keeps the raw result
# under "_run" for the tests' own assertions.

# Errors the tools may ignore: k6 with preset=tidb on TiDB (the seeds' list), MariaDB with
# sysbench's default list plus 2013 (lost connection, after which sysbench reconnects).
# sysbench gets at least as much: also 2003 (cannot connect), and on TiDB sysbench's own
# default list besides the seeds' (a TiDB restarted after kill -9 may answer 1213 at first).
K6_IGNORE = {"tidb": "1062,2013,8028,9007", "mariadb": "1213,1020,1205,2013"}
SYSBENCH_IGNORE = {"tidb": "1213,1020,1205,1062,2013,2003,8028,9007", "mariadb": "1213,1020,1205,2013,2003"}
def _contract():
    try:
        return json.loads((ROOT / "k6/contract.json").read_text())
    except (OSError, ValueError):
        return {}


# k6's graceful stop after each step and its connect phase: options grace_time and connect_time
# (k6 reads them from the environment too, as the tests set them), else the contract's defaults
GRACE_S = int(os.environ.get("grace_time") or _contract().get("options", {}).get("grace_time", {}).get("default", 3))


def connect_s(threads):
    """The connect phase before a step's start (k6/lib/steps.js connectSeconds)."""
    fixed = os.environ.get("connect_time", "auto")
    if fixed != "auto":
        return int(fixed)
    t = _contract().get("timing", {})
    return t.get("connect_s", 0) + t.get("connect_s_per_1000_threads", 0) * threads / 1000


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


def _rows_intact(sb, target, tables, table_size):
    return all(int(sb.sql(target, f"SELECT COUNT(*) FROM sbtest{t}")[0][0]) == table_size for t in range(1, tables + 1))


def k6_qps_between(sb, testid, t0, t1):
    """Queries per second k6 pushed to Prometheus between two epoch seconds (its samples come
    every 2 s, so the window is widened to whole samples)."""
    if t1 - t0 < 2:
        return None
    q0, q1 = sb.queries_at(testid, t0), sb.queries_at(testid, t1)
    if q0 is None or q1 is None:
        return None
    return (q1 - q0) / (t1 - t0)


def db_fault(sb, target, kind, tool="k6", seconds=20, at=5, down=5, threads=4, workload="oltp_read_write",
             tables=2, table_size=2000, steps=None):
    """A database fault during a step: kind = kill (kill -9 at `at`, started again `down` s
    later), drop (the network to it cut and refused for `down` s), stop (stopped at `at` for
    longer than the step; started again after the run). tool = k6 or sysbench (1.0.20)."""
    port = None
    proxy = None
    if kind == "drop":
        proxy = sb.proxy(target)
        port = proxy.port
        faults = [At(at, proxy.drop, down, name=f"network to {target} dropped for {down}s")]
    elif kind == "kill":
        faults = [At(at, sb.kill, target, name=f"kill -9 {target}"), At(at + down, sb.start, target, name=f"start {target}")]
    elif kind == "stop":
        faults = [At(at, sb.stop, target, name=f"stop {target}")]
    else:
        raise ValueError(kind)
    nsteps = len(str(steps or threads).split(","))
    planned = seconds * nsteps
    row = {"fault": {"kill": f"{target} killed (-9) at {at}s, started {down}s later",
                     "drop": f"network to {target} cut and refused for {down}s at {at}s",
                     "stop": f"{target} stopped at {at}s of a {seconds}s step, for longer than the step"}[kind],
           "tool": tool, "target": target, "kind": kind}
    try:
        if tool == "k6":
            opts = {"workload": workload, "tables": tables, "table_size": table_size, "threads": steps or threads,
                    "time": seconds}
            if target == "tidb":
                opts["preset"] = "tidb"
            else:
                opts["mysql_ignore_errors"] = K6_IGNORE[target]
            r = sb.k6_run(target, opts, faults=faults, port=port)
            st = r.summary.get("steps") or []
            s0 = st[0] if st else {}
            t_fault = r.events[0][0] if r.events else r.started + at
            back = [t for t, n in r.events if n.endswith(" done") and (n.startswith("start") or n.startswith("network"))]
            end = s0.get("window", {}).get("measure_end", 0) / 1000 or r.ended
            if back and s0.get("max_gap_start"):
                # QPS after: from when events completed again (k6's own gap end), not from when
                # `scripts/stack restart` returned (it waits until the server is ready and has
                # its users, seconds after k6 is back)
                back = [min(back[0], s0["max_gap_start"] / 1000 + s0["max_gap_s"])]
            row.update({
                "exit": r.returncode, "testid": r.testid,
                "wall_s": round(r.ended - r.started, 1), "planned_s": planned,
                "reconnects": sum(s.get("reconnects", 0) for s in st),
                "errors": sum(s.get("errors", 0) for s in st),
                "gap_s": round(max([s.get("max_gap_s", 0) for s in st] or [0]), 1),
                "disturbed": [s["threads"] for s in st if s.get("max_gap_s", 0) >= 1],
                "qps_before": k6_qps_between(sb, r.testid, t_fault - 3, t_fault) if r.testid else None,
                "qps_after": k6_qps_between(sb, r.testid, back[0] + 1, end) if back and r.testid else 0.0,
                "results_file": bool(r.summary),
            })
            row["_run"] = r
        else:
            r = sb.sysbench_run(target, workload, threads, seconds, SYSBENCH_IGNORE[target], faults=faults,
                                tables=tables, table_size=table_size, port=port)
            iv = r.intervals()
            t_fault = at
            back = [t - r.started for t, n in r.events if n.endswith(" done") and (n.startswith("start") or n.startswith("network"))]
            row.update({
                "exit": r.returncode, "wall_s": round(r.ended - r.started, 1), "planned_s": planned,
                "reconnects": r.reconnects(), "errors": r.errors(),
                "gap_s": round(r.longest_gap(), 1) if iv else None,
                "qps_before": _mean(q for s, q in iv if t_fault - 4 < s <= t_fault) if iv else None,
                "qps_after": _mean(q for s, q in iv if back and back[0] + 2 < s <= seconds) if back else 0.0,
                "last_report_s": iv[-1][0] if iv else 0,
                "crash": r.returncode < 0 or r.returncode >= 128,
                "tail": "\n".join(r.output.strip().splitlines()[-3:]),
            })
            row["_run"] = r
    finally:
        sb.start(target)  # (when a fault left it down)
        if proxy:
            proxy.close()
            sb.proxies.remove(proxy)
    row["rows_intact"] = _rows_intact(sb, target, tables, table_size) if workload == "oltp_read_write" else None
    ok = (row["exit"] == 0 and row["wall_s"] <= planned + (GRACE_S + connect_s(threads) + 3) * nsteps
          and (kind == "stop" or (row["qps_after"] or 0) > 0) and row["rows_intact"] is not False)
    row["verdict"] = "holds" if ok else "fails"
    if ok and tool == "k6" and (row.get("gap_s") or 0) < min(down, seconds - at) - 1.5:
        # the run held, but its results do not show how long no event completed
        row["verdict"] = "run holds; outage missing from max_gap_s"
    return row


def prometheus_fault(sb, kind, target="tidb", seconds=12, at=3, down=5, threads=4, workload="oltp_point_select",
                     tables=2, table_size=2000):
    """kind = kill (Prometheus killed -9 at `at`, started `down` s later), unreachable (no
    Prometheus at the remote-write address for the whole run), missed_step (Prometheus down
    from before the run until the first of two steps has ended)."""
    opts = {"workload": workload, "tables": tables, "table_size": table_size, "threads": threads, "time": seconds}
    prom_arg = True
    faults = []
    if kind == "kill":
        faults = [At(at, sb.kill, "prometheus", name="kill -9 prometheus"),
                  At(at + down, sb.start, "prometheus", name="start prometheus")]
        what = f"Prometheus killed (-9) at {at}s, started {down}s later"
    elif kind == "unreachable":
        prom_arg = f"http://{HOST}:{free_port()}"
        what = "Prometheus unreachable for the whole run"
    elif kind == "missed_step":
        opts["threads"] = f"{threads // 2 or 1},{threads}"
        sb.stop("prometheus")
        faults = [At(seconds + GRACE_S + 1, sb.start, "prometheus", name="start prometheus")]
        what = "Prometheus down for the whole first of two steps"
    else:
        raise ValueError(kind)
    try:
        r = sb.k6_run(target, opts, faults=faults, prometheus=prom_arg)
    finally:
        sb.start("prometheus")
    st = r.summary.get("steps") or []
    planned = seconds * len(st or [1])
    totals = []
    if kind != "unreachable":
        for s in st:
            deadline = time.time() + 20
            got = None
            while time.time() < deadline:
                got = sb.step_total(r.testid, s)
                if got == s["queries"]["total"] or (kind == "missed_step" and s is st[0]):
                    break
                time.sleep(1)
            totals.append((s["threads"], got, s["queries"]["total"]))
    row = {"fault": what, "tool": "k6", "target": target, "kind": f"prometheus_{kind}", "exit": r.returncode,
           "testid": r.testid, "wall_s": round(r.ended - r.started, 1), "planned_s": planned,
           "gap_s": round(max([s.get("max_gap_s", 0) for s in st] or [0]), 2),
           "qps": round(_mean(s["qps"] for s in st), 1) if st else None,
           "totals": totals, "results_file": bool(r.summary), "_run": r}
    if kind == "kill":
        ok = all(p == k for _, p, k in totals)
    elif kind == "missed_step":
        ok = totals and totals[0][1] is None and all(p == k for _, p, k in totals[1:])
    else:
        ok = True
    row["verdict"] = "holds" if (ok and r.returncode == 0 and row["gap_s"] < 1
                                 and row["wall_s"] <= planned + GRACE_S * len(st or [1]) + 10) else "fails"
    return row


def loki_fault(sb, target="tidb", seconds=12, at=2, down=3, threads=2):
    """Loki killed (-9) mid-run and started `down` s later (it needs ~10 s to be ready): the
    log lines k6 wrote meanwhile reach Loki once it is back. The run logs where every run logs
    (the stack's k6 log, which its promtail follows); every line appended to that file during
    the run (this run's, and any other run's meanwhile) is looked up in Loki, as often as it was
    written."""
    log = sb.k6_log
    start_offset = log.stat().st_size if log.exists() else 0
    t0 = time.time()
    opts = {"workload": "oltp_point_select", "tables": 2, "table_size": 2000, "threads": threads, "time": seconds,
            "report_interval": 1}
    faults = [At(at, sb.kill, "loki", name="kill -9 loki"), At(at + down, sb.start, "loki", name="start loki")]
    try:
        r = sb.k6_run(target, opts, faults=faults)
    finally:
        sb.start("loki")
    with open(log, "rb") as f:
        f.seek(start_offset)
        written = f.read().decode(errors="replace").split("\n")[:-1]  # whole lines only
    want = Counter(x.rstrip() for x in written if x.strip())
    lines = sum(want.values())
    t_kill = r.event_time("kill -9 loki")
    t_back = r.event_time("start loki done")
    selector = f'{{service="k6",filename="{log}"}}'
    deadline = time.time() + 60
    got = None
    while time.time() < deadline:
        have = sb.loki_lines(selector, t0 - 5, time.time() + 1)
        got = sum(min(n, have[x]) for x, n in want.items())
        if got >= lines:
            break
        time.sleep(2)
    row = {"fault": f"Loki killed (-9) at {at}s, back after {round(t_back - t_kill, 1)}s", "tool": "k6",
           "target": target, "kind": "loki_kill", "exit": r.returncode, "testid": r.testid,
           "wall_s": round(r.ended - r.started, 1), "planned_s": seconds,
           "gap_s": round(max([s.get("max_gap_s", 0) for s in r.summary.get("steps", [])] or [0]), 2),
           "log_lines": lines, "loki_lines": got,
           # stamped by promtail as it read them: the lines written while Loki was away
           "loki_lines_during_outage": sb.loki_count(selector, t_kill, t_back),
           "_run": r}
    row["verdict"] = "holds" if (r.returncode == 0 and got == lines and row["gap_s"] < 1) else "fails"
    return row


def interrupt(sb, sig, group, target="tidb", seconds=6, at=None, threads="2,4"):
    """SIGINT/SIGTERM in the middle of the second step: to the whole process group, as a
    terminal's Ctrl-C or a CI runner's cancel sends it, or to k6 alone."""
    at = at if at is not None else seconds + GRACE_S + connect_s(4) + seconds / 2
    opts = {"workload": "oltp_point_select", "tables": 2, "table_size": 2000, "threads": threads, "time": seconds}
    r = sb.k6_run(target, opts, signal_at=(at, sig, group))
    st = r.summary.get("steps") or []
    name = signal.Signals(sig).name
    row = {"fault": f"{name} to {'the process group (Ctrl-C)' if group else 'k6'} in step 2 of 2", "tool": "k6",
           "target": target, "kind": f"{name.lower()}_{'group' if group else 'k6'}", "exit": r.returncode,
           "testid": r.testid, "results_file": bool(r.summary), "interrupted": r.summary.get("interrupted"),
           "steps": [(s["threads"], bool(s.get("interrupted")), round(s.get("elapsed_s", 0), 1)) for s in st],
           "run_end": r.summary.get("run_end"), "wall_s": round(r.ended - r.started, 1), "_run": r}
    row["verdict"] = "holds" if (row["results_file"] and row["interrupted"] and len(st) == 2
                                 and not st[0].get("interrupted") and st[1].get("interrupted")) else "fails"
    return row


def soak(sb, minutes, target="tidb", threads=8, workload="oltp_read_write", fault_at=None, down=5, sample_every=10):
    """A long run at full speed with TiDB killed (-9) in the middle: RSS and file descriptors of
    k6 and of the servers, k6's connections to the database, sampled all along."""
    seconds = int(minutes * 60)
    fault_at = fault_at if fault_at is not None else seconds // 2
    opts = {"workload": workload, "tables": 2, "table_size": 2000, "threads": threads, "time": seconds}
    if target == "tidb":
        opts["preset"] = "tidb"
    else:
        opts["mysql_ignore_errors"] = K6_IGNORE[target]
    pids = {n: (lambda n=n: sb.pid(n)) for n in (target, "prometheus", "loki", "promtail")}
    r = sb.k6_run(target, opts, faults=[At(fault_at, sb.kill, target, name=f"kill -9 {target}"),
                                        At(fault_at + down, sb.start, target, name=f"start {target}")],
                  sample_every=sample_every, sample_pids=pids, timeout=seconds + 300)
    # samples inside the measured window (after it, k6 closes its connections)
    s = [x for x in r.samples if r.started <= x["t"] <= r.started + seconds - 1]
    db_port = sb.ports[target]
    row = {"fault": f"soak {minutes} min, {threads} threads, {target} killed (-9) at {fault_at}s", "tool": "k6",
           "target": target, "kind": "soak", "exit": r.returncode, "testid": r.testid, "samples": len(s),
           "wall_s": round(r.ended - r.started, 1), "planned_s": seconds, "_run": r}
    if len(s) >= 4:
        q = len(s) // 4
        first, last = s[q], s[-1]  # after the first quarter (warm caches, all connections open)
        for key in sorted(k for k in s[0] if k.endswith("_rss_kb") or k.endswith("_fds")):
            row[key] = (first[key], last[key], max(x[key] for x in s[q:]))
        row["k6_conns"] = (first["k6_conns"], last["k6_conns"])
    st = (r.summary.get("steps") or [{}])[0]
    row.update({"reconnects": st.get("reconnects"), "gap_s": round(st.get("max_gap_s", 0), 1),
                "qps": round(st.get("qps", 0), 1), "db_port": db_port})
    ok = r.returncode == 0 and len(s) >= 4
    if ok:
        a, b, _ = row["k6_rss_kb"]
        ok = b <= a * 1.25 + 20 * 1024
        fa, fb, _ = row["k6_fds"]
        ok = ok and fb <= fa + 4
        ok = ok and row["k6_conns"][1] <= row["k6_conns"][0] + 2
    row["verdict"] = "holds" if ok else "fails"
    return row
