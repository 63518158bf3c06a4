"""The running local stack, driven for tools/faults and tests/test_faults.py: process probes
(RSS, descriptors, connections), Stack (k6 and sysbench runs with faults at set times, made with the stack's own
service commands `scripts/stack kill|stop|restart SERVICE`: the stack is the one code that
starts servers). The scenarios are in faultkit.py, the network-cutting proxy in cutproxy.py.

Secrets: the stack's password (.stack/secrets/sbtest) reaches k6 and the SQL client in the
environment (never as an argument), sysbench in a mode-600 config file.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tbstools.cutproxy import HOST, CutProxy
from tidbbench import contract

ROOT = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("TBS_STATE", ROOT / ".stack"))
STACK = ROOT / "scripts/stack"
DB = "sbtest_faults"  # the faults' own database on the stack's targets (the sbtest user owns sbtest*)
# the services a fault may stop (scripts/stack's names), each restarted by close() if left down
SERVICES = ("tidb", "mariadb", "prometheus", "loki", "otelcol")


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


class _K6Process:
    """A k6 run of Stack.k6_run as its threads see it: the process, its output, the faults' events
    and errors, the samples, when its first step starts (t0, an estimate until measured)."""

    def __init__(self, proc):
        self.proc = proc
        self.lines, self.events, self.samples, self.errors = [], [], [], []
        self.t0 = None
        self.pid = None  # the k6 process itself (scripts/k6 runs it as a child)
        self.testid_seen = threading.Event()

    def read(self, connect_seconds):
        for line in self.proc.stdout:
            self.lines.append(line)
            if self.t0 is None and "testid=" in line:
                self.t0 = time.time() + connect_seconds
                self.testid_seen.set()
        self.testid_seen.set()

    def testid(self):
        m = re.search(r"testid=(\S+)", "".join(self.lines))
        return m.group(1) if m else ""

    def k6_pid(self):
        if self.pid is None:
            self.pid = k6_child(self.proc.pid)
        return self.pid

    def signal_action(self, t, sig, group=False):
        """signal_at of k6_run: sig at t s, to k6 (or to its whole process group)."""
        send = (lambda: os.killpg(self.proc.pid, sig)) if group else (lambda: os.kill(self.k6_pid() or self.proc.pid, sig))
        return At(t, send, name=f"signal {signal.Signals(sig).name}")


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
        run = _K6Process(subprocess.Popen(args, cwd=ROOT / "k6", env=e, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True, start_new_session=True))
        reader = threading.Thread(target=run.read, args=(connect_s(threads),), daemon=True)
        reader.start()
        run.testid_seen.wait(timeout=120)
        actions = list(faults)
        if signal_at:
            actions.append(run.signal_action(*signal_at))
        firer = threading.Thread(target=self._fire, args=(run, actions, prometheus), daemon=True)
        firer.start()
        if sample_every:
            threading.Thread(target=self._sample, args=(run, port or self.ports[target], sample_every, sample_pids),
                             daemon=True).start()
        proc = run.proc
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        ended = time.time()
        reader.join(timeout=10)
        firer.join(timeout=120)
        out = "".join(run.lines)
        testid = run.testid()
        summary = {}
        if testid and (self.results / f"{testid}.json").exists():
            summary = json.loads((self.results / f"{testid}.json").read_text())
        started = run.t0 or ended
        if summary.get("steps"):
            started = summary["steps"][0]["window"]["measure_start"] / 1000
        if run.errors:
            out += "\n[fault harness] " + "; ".join(run.errors)
        return RunResult(proc.returncode, out, testid, summary, started, ended, run.events, run.samples, run.pid or 0)

    def _measure_start(self, run, prometheus):
        """The first step's measured window starts at the value of its measure_start marker,
        which reaches Prometheus within a push interval; without Prometheus, an estimate."""
        testid = run.testid()
        if testid and prometheus is True and self.pid("prometheus"):
            q = f'max(last_over_time(k6_oltp_marker{{testid="{testid}",event="measure_start"}}[1m]))'
            deadline = time.time() + 5
            while time.time() < deadline and run.proc.poll() is None:
                try:
                    v = self.prom_value(q)
                except (OSError, RuntimeError):
                    v = None
                if v:
                    return v / 1000
                time.sleep(0.2)
        return run.t0 + 1.0  # (measured: the step starts about 1 s after connect_s)

    def _fire(self, run, actions, prometheus):
        """Each action at its time after the first step's measured window starts."""
        if run.t0 is not None:
            run.t0 = self._measure_start(run, prometheus)
        for a in sorted(actions, key=lambda a: a.t):
            if run.t0 is None:
                return
            delay = run.t0 + a.t - time.time()
            if delay > 0:
                time.sleep(delay)
            if run.proc.poll() is not None:
                return
            run.events.append((time.time(), a.name))
            try:
                a.fn(*a.args)
            except Exception as ex:  # noqa: BLE001 - reported with the result
                run.errors.append(f"{a.name}: {ex}")
            run.events.append((time.time(), a.name + " done"))

    def _sample(self, run, db_port, every, sample_pids):
        # the k6 process is the one holding the connections to the database (found by ss)
        pid = 0
        while run.proc.poll() is None and not pid:
            out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True).stdout
            owners = re.findall(rf"\S+\s+{re.escape(HOST)}:{db_port}\s+users:\(\(\"k6\",pid=(\d+),", out)
            pid = int(max(set(owners), key=owners.count)) if owners else 0
            if not pid:
                time.sleep(0.5)
        run.pid = pid
        while run.proc.poll() is None and pid:
            row = {"t": time.time(), "k6_rss_kb": proc_rss_kb(pid), "k6_fds": proc_fds(pid),
                   "k6_conns": tcp_connections(pid=pid)}
            for name, spid in (sample_pids or {}).items():
                spid = spid() if callable(spid) else spid
                row[f"{name}_rss_kb"] = proc_rss_kb(spid)
                row[f"{name}_fds"] = proc_fds(spid)
            run.samples.append(row)
            time.sleep(every)

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


# k6's graceful stop after each step and its connect phase: options grace_time and connect_time
# (k6 reads them from the environment too, as the tests set them), else the contract's defaults
GRACE_S = int(os.environ.get("grace_time") or contract.options()["grace_time"]["default"])


def connect_s(threads):
    """The connect phase before a step's start, as the run has it (tidbbench.contract)."""
    return contract.connect_seconds(threads)
