"""Helpers of tools/bench (stdlib only): the database and the client on separate cores,
sysbench's password in a config file (never on a command line), the run conditions, TiDB's
statement summary per schema, Prometheus' own figures, and the process probes (RSS, sockets).
"""
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tidbbench import sbhist

# sysbench's latency histogram (defined once, in k6/x/tbs; tidbbench.sbhist reads it): one bucket
# is a factor of about 1.018, the resolution of any p95 sysbench prints.
SYSBENCH_BUCKET = sbhist.FACTOR
ROOT = Path(__file__).resolve().parents[2]
# the local stack's targets (runtime/stack.json's ports)
PORTS = {"tidb": 4000, "mariadb": 3306}


def sysbench_queries(out):
    return int(re.search(r"^\s+queries:\s+(\d+)", out, re.M).group(1)), \
        float(re.search(r"^\s+queries:\s+\d+\s+\(([\d.]+) per sec", out, re.M).group(1))


def k6_result(out):
    testid = re.search(r"testid=(\S+)", out).group(1)
    return json.loads((ROOT / "results" / f"{testid}.json").read_text())


def verdict(ok):
    return "ok" if ok else "SHORT"


# ---------------------------------------------------------------- cores


def tasks(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return []


class Pinning:
    """The database server's threads on one core, the client's on another, as with a dedicated
    load-generator host. Every thread of the server is moved (taskset -a); threads it starts
    later inherit the core. restore() gives each thread back the affinity it had (threads born
    while pinned get the main thread's), also on SIGTERM/SIGINT (the bench turns those into
    SystemExit); a SIGKILLed bench leaves the server pinned: `taskset -a -p -c 0-N PID` undoes it."""

    def __init__(self, db_core, client_core):
        n = os.cpu_count() or 1
        for name, c in (("--pin-db", db_core), ("--pin-client", client_core)):
            if c < 0 or c >= n:
                raise SystemExit(f"error: {name} {c} is not a core of this machine (valid: 0..{n - 1})")
        if db_core == client_core:
            raise SystemExit(f"error: --pin-db and --pin-client are both {db_core}: they must differ (or use --no-pin)")
        self.db_core, self.client_core = db_core, client_core
        self.saved = {}  # pid -> {tid: affinity}

    def pin_server(self, pid):
        if pid in self.saved:
            return
        saved = {}
        for tid in tasks(pid):
            with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                saved[tid] = os.sched_getaffinity(tid)
        self.saved[pid] = saved
        self._set(pid, lambda tid: {self.db_core})

    def _set(self, pid, cores_of):
        for tid in tasks(pid):
            with contextlib.suppress(ProcessLookupError, FileNotFoundError, OSError):
                os.sched_setaffinity(tid, cores_of(tid))

    def restore(self):
        for pid, saved in self.saved.items():
            main = saved.get(pid) or set(range(os.cpu_count() or 1))
            self._set(pid, lambda tid: saved.get(tid, main))
        self.saved = {}

    def client_preexec(self):
        core = self.client_core
        return lambda: os.sched_setaffinity(0, {core})

    def describe(self):
        return f"database threads on core {self.db_core}, client (sysbench, k6, gofloor) on core {self.client_core}"


class CpuCap:
    """A process held to a share of one core by cgroup v1's cpu controller (cpu.cfs_quota_us over
    a 10 ms period; a short period spreads the throttling thin instead of stalling the server for
    tens of ms at a time). With the database pinned to one core, a cap of 95% is a real, known
    slow-down of about 5% wherever the database is the bottleneck: the change `tools/history-quality
    e2e --slow-db` makes midway through a series (issue #43), where a TiDB variable's effect would
    have to be measured first. release() moves the process back to the group it came from and
    removes ours, also after a failed run (callers use try/finally)."""
    CPU = Path("/sys/fs/cgroup/cpu")
    PERIOD_US = 10_000

    def __init__(self, pid, share, name, cpu_root=None):
        root = Path(cpu_root or self.CPU)
        if not 0 < share < 1:
            raise ValueError(f"a CPU share of {share}: valid shares are above 0 and below 1")
        if not (root / "cgroup.procs").is_file() or not (root / "cpu.cfs_quota_us").is_file():
            raise OSError(f"{root} is not cgroup v1's cpu controller (no cgroup.procs and cpu.cfs_quota_us): "
                          "the cap needs it, mounted and writable")
        self.root, self.pid = root, pid
        self.came_from = self.group_of(pid)
        self.group = root / name
        self.group.mkdir()
        try:
            (self.group / "cpu.cfs_period_us").write_text(str(self.PERIOD_US))
            (self.group / "cpu.cfs_quota_us").write_text(str(max(1000, round(self.PERIOD_US * share))))
            (self.group / "cgroup.procs").write_text(str(pid))  # v1: moves every thread of the process
        except OSError:
            self.release()
            raise

    @staticmethod
    def group_of(pid):
        """The process's group in the cpu hierarchy ('/' for the root), from /proc/PID/cgroup."""
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "cpu" in controllers.split(","):
                return path
        return "/"

    def release(self):
        back = self.root / self.came_from.lstrip("/")
        with contextlib.suppress(FileNotFoundError):
            for pid in (self.group / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError, OSError):
                    (back / "cgroup.procs").write_text(pid)
        with contextlib.suppress(FileNotFoundError):
            self.group.rmdir()


class CpuWeights:
    """Processes in sibling groups of cgroup v1's cpu controller, one group each, with CPU weights
    (cpu.shares, 1024 for a share of 1). Two databases pinned to one core for a duet (issue #43,
    tools/history-quality --duet) then split it by process, not by runnable thread (in one group
    the side with more threads would get more of the core), and set(name, 0.95) is a known slow-down
    of that side by 5% against the other wherever the core sets the pace: the duet's analogue of
    CpuCap. release() moves every process back to the group it came from and removes ours, also
    after a failed run (callers use try/finally)."""
    CPU = CpuCap.CPU
    FULL = 1024

    def __init__(self, pids, prefix, cpu_root=None):
        root = Path(cpu_root or self.CPU)
        if not (root / "cgroup.procs").is_file() or not (root / "cpu.shares").is_file():
            raise OSError(f"{root} is not cgroup v1's cpu controller (no cgroup.procs and cpu.shares): the "
                          "weights need it, mounted and writable")
        self.root, self.groups, self.came_from = root, {}, {}
        try:
            for name, pid in pids.items():
                self.came_from[name] = CpuCap.group_of(pid)
                g = root / f"{prefix}-{name}"
                g.mkdir()
                self.groups[name] = g
                (g / "cpu.shares").write_text(str(self.FULL))
                (g / "cgroup.procs").write_text(str(pid))  # v1: moves every thread of the process
        except OSError:
            self.release()
            raise

    def set(self, name, share):
        """The group's weight as a share of the others' (1: equal; 0.95: 5% less of a shared core)."""
        if not 0 < share <= 1:
            raise ValueError(f"a CPU weight of {share}: valid weights are above 0 and at most 1")
        (self.groups[name] / "cpu.shares").write_text(str(max(2, round(self.FULL * share))))

    def weight(self, name):
        return int((self.groups[name] / "cpu.shares").read_text()) / self.FULL

    def release(self):
        for name, g in self.groups.items():
            back = self.root / self.came_from.get(name, "/").lstrip("/")
            with contextlib.suppress(FileNotFoundError):
                for pid in (g / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, OSError):
                        (back / "cgroup.procs").write_text(pid)
            with contextlib.suppress(FileNotFoundError, OSError):
                g.rmdir()
        self.groups = {}


def exit_on_signals():
    def handler(sig, _frame):
        raise SystemExit(f"tools/bench: stopped by signal {sig}")
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


# ---------------------------------------------------------------- conditions


def busy_cpu_seconds():
    """CPU seconds the whole machine has spent busy (all processes, /proc/stat)."""
    f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = f[3] + f[4]  # idle + iowait
    return (sum(f[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid):
    """utime + stime of a running process and its waited-for children (/proc/PID/stat), 0 if gone."""
    try:
        s = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    f = s[s.rindex(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    return mem_mib(pid).get("VmRSS")


def mem_mib(pid):
    """A running process' resident memory in MiB from /proc/PID/status: VmRSS, and its parts
    RssAnon (heap, stacks: what the process made) and RssFile (mapped files: the binary's pages,
    which fill in as its code runs); {} when it is gone."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


class Conditions:
    """How busy the machine was: CPU used by processes other than this bench, its children and
    the stack's servers it names (databases, Prometheus), averaged over the bench (quiet: well
    under 0.1 core). Load other clients put on the same servers is not seen here."""

    def __init__(self, server_pids):
        self.server_pids = [p for p in server_pids if p]
        self.t0 = time.time()
        self.busy0 = busy_cpu_seconds()
        self.srv0 = sum(process_cpu_seconds(p) for p in self.server_pids)
        self.load0 = os.getloadavg()
        self.start_children()

    def others_cores(self):
        import resource
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        ru_self = resource.getrusage(resource.RUSAGE_SELF)
        ours = ru.ru_utime + ru.ru_stime + ru_self.ru_utime + ru_self.ru_stime
        srv = sum(process_cpu_seconds(p) for p in self.server_pids) - self.srv0
        wall = max(time.time() - self.t0, 1e-9)
        others = busy_cpu_seconds() - self.busy0 - srv - (ours - self.ours0)
        return max(others, 0.0) / wall, wall

    def start_children(self):
        import resource
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        ru_self = resource.getrusage(resource.RUSAGE_SELF)
        self.ours0 = ru.ru_utime + ru.ru_stime + ru_self.ru_utime + ru_self.ru_stime

    def summary(self):
        others, wall = self.others_cores()
        load1 = os.getloadavg()
        verdict = "quiet" if others < 0.1 else "BUSY (figures are noisy; re-run on a quiet machine)"
        return (f"conditions: {wall:.0f} s of bench; other processes used {others:.2f} of {os.cpu_count()} cores on average "
                f"-> {verdict}; load average {self.load0[0]:.2f} at start, {load1[0]:.2f} at end")


# ---------------------------------------------------------------- credentials


class SysbenchConfig:
    """sysbench reads the password from --config-file (a private temporary file), so it is never
    in a process' arguments."""

    def __init__(self, state, password):
        fd, self.path = tempfile.mkstemp(prefix=".bench-sysbench-", dir=state)
        with os.fdopen(fd, "w") as f:
            f.write(f"mysql-password={password}\n")

    def close(self):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def sql_env(password):
    env = dict(os.environ)
    env["MYSQL_PWD"] = password  # the mariadb client's password variable: not on its command line
    return env


# ---------------------------------------------------------------- statistics


def spread(xs):
    """'median [min-max]' of a list of numbers."""
    return statistics.median(xs), min(xs), max(xs)


def fmt_spread(xs, d=2):
    if not xs:  # no figure in any round (sysbench's bulk_insert prints no percentile)
        return "n/a"
    m, lo, hi = spread(xs)
    return f"{m:.{d}f} [{lo:.{d}f}-{hi:.{d}f}]"


def sysbench_p95(out):
    m = re.search(r"^\s+95th percentile:\s+([\d.]+)", out, re.M)
    return float(m.group(1)) if m else None


# ---------------------------------------------------------------- TiDB statement summary


STMT_COLS = "SUMMARY_BEGIN_TIME, SCHEMA_NAME, DIGEST, EXEC_COUNT, SUM_LATENCY, PLAN_CACHE_HITS, DIGEST_TEXT"


def stmt_summary(mysql_cmd, env, schemas):
    """{(begin, schema, digest): [exec_count, sum_latency_ns, plan_cache_hits, text]} for the given
    schemas, over the current window and the history (a window may turn over during a run)."""
    names = ",".join(f"'{s}'" for s in schemas)
    q = (f"SELECT {STMT_COLS} FROM information_schema.statements_summary WHERE SCHEMA_NAME IN ({names}) "
         f"UNION ALL SELECT {STMT_COLS} FROM information_schema.statements_summary_history WHERE SCHEMA_NAME IN ({names})")
    out = subprocess.run([*mysql_cmd, "-N", "-B", "-e", q], env=env, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 7:
            continue
        # one digest can have several rows (TiDB keys COMMIT by the statement before it, and
        # by plan digest): summed
        r = rows.setdefault((f[0], f[1], f[2]), [0, 0, 0, f[6]])
        r[0] += int(f[3])
        r[1] += int(f[4])
        r[2] += int(f[5])
    return rows


def stmt_delta(before, after):
    """Per (schema, digest): exec count, mean latency (ms) and plan-cache hits over the interval."""
    agg = {}
    for key, (n, lat, hits, text) in after.items():
        b = before.get(key, [0, 0, 0, text])
        dn, dl, dh = n - b[0], lat - b[1], hits - b[2]
        if dn <= 0:
            continue
        a = agg.setdefault((key[1], key[2]), [0, 0, 0, text])
        a[0] += dn
        a[1] += dl
        a[2] += dh
    return agg


def stmt_compare(delta, sb_schema, our_schema):
    """Rows (text, sysbench execs, ours execs, sysbench avg ms, ours avg ms, sb hit %, ours hit %),
    statement by statement, the busiest first."""
    digests = {d for (_, d) in delta}
    rows = []
    for d in digests:
        s = delta.get((sb_schema, d), [0, 0, 0, None])
        o = delta.get((our_schema, d), [0, 0, 0, None])
        text = s[3] or o[3]
        avg = lambda a: a[1] / a[0] / 1e6 if a[0] else None  # noqa: E731
        hit = lambda a: 100.0 * a[2] / a[0] if a[0] else None  # noqa: E731
        rows.append((text, s[0], o[0], avg(s), avg(o), hit(s), hit(o)))
    rows.sort(key=lambda r: -(r[1] + r[2]))
    return rows


# ---------------------------------------------------------------- Prometheus


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def prom_self(url):
    """Prometheus' own process_cpu_seconds_total and prometheus_tsdb_head_series, read from its
    /metrics (the figures job="prometheus" scrapes, without waiting for a scrape)."""
    cpu = series = None
    for line in http_get(f"{url}/metrics").splitlines():
        if line.startswith("process_cpu_seconds_total "):
            cpu = float(line.split()[1])
        elif line.startswith("prometheus_tsdb_head_series "):
            series = float(line.split()[1])
    return cpu, series


def prom_series_count(url, testid, start, end):
    """Number of series with this testid (Prometheus' series API, over the run's time)."""
    q = urllib.parse.urlencode({"match[]": f'{{testid="{testid}"}}', "start": f"{start:.3f}", "end": f"{end:.3f}"})
    return len(json.loads(http_get(f"{url}/api/v1/series?{q}", timeout=60))["data"])


def dir_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(root, f)).st_size
    return total


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- sockets of a client


def connections_to(pid, port):
    """Established TCP connections of process `pid` to 127.0.0.1:`port` (its socket inodes
    matched against /proc/net/tcp{,6})."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
    except (FileNotFoundError, ProcessLookupError):
        return 0
    if not inodes:
        return 0
    want = f"{port:04X}"
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            with open(table) as f:
                next(f)
                for line in f:
                    p = line.split()
                    if p[3] == "01" and p[2].rsplit(":", 1)[1] == want and p[9] in inodes:
                        n += 1
    return n
