"""Duet runs on the local stack for tools/history-quality --duet (issue #43): a reference TiDB beside
the stack's, both on one core, and each history point one duet plan (scripts/sweep, `"reference"`
and `"duet": true`: both runs at once) whose candidate's `vs_ref` is the figure the history judges.

Why: on a shared 2-core VM the host's speed drifts by 10-25% within minutes (docs/history.md, the
spread table), so single runs, even interleaved with a reference run minutes apart, vary by 12-24%.
Two runs at the same time see the same host: what it does to one it does to the other, and their
ratio keeps only what differs between the two databases (Bulej et al., "Duet Benchmarking:
Improving Measurement Accuracy in the Cloud", Empirical Software Engineering 25, 2020).

Here the reference is a second tidb-server of the same build (its own unistore data, in .stack/,
removed at the end) on --ref-port; both databases' threads are pinned to --pin-db and put in
sibling cgroups of equal CPU weight (benchkit.CpuWeights: the core is split by process, not by
runnable thread), k6 and the plan runner to --pin-client. `--slow-db PCT` in the e2e lowers the
candidate's weight to (100 - PCT)%: a known slow-down of the candidate against the reference."""
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tidbbench import ROOT, ReportError, disturbance
from tidbbench.history import store
from tidbbench.k6env import state_dir

REF_ARM, CAND_ARM = "ref", "cand"


def port_open(port):
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


class RefTidb:
    """A second tidb-server of the stack's build (bin/tidb-server), on unistore in a data folder of
    its own, bound to 127.0.0.1; its root gets the stack's root password and the benchmark user the
    stack's sbtest password (scripts/stack's create_bench_user), so k6's login works on both."""

    def __init__(self, port, status_port, stamp):
        self.port, self.status_port = port, status_port
        self.data = state_dir() / "data" / f"tidb-ref-{stamp}"
        self.log = state_dir() / "logs" / "tidb-ref.log"
        self.proc = None

    def start(self):
        for p in (self.port, self.status_port):
            if port_open(p):
                raise ReportError(f"port {p} on 127.0.0.1 is taken: the reference TiDB needs --ref-port and "
                                  "--ref-status-port free (valid: any free ports)", code=2)
        binary = ROOT / "bin/tidb-server"
        if not binary.exists():
            raise ReportError(f"no {binary}: run scripts/build tidb", code=2)
        self.data.mkdir(parents=True)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [str(binary), "--store=unistore", f"--path={self.data}", "--host=127.0.0.1", "-P", str(self.port),
             f"--status={self.status_port}", "--status-host=127.0.0.1", "--advertise-address=127.0.0.1",
             f"--log-file={self.log}", f"--log-slow-query={self.log.with_name('tidb-ref-slow.log')}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 120
        while True:
            if self.proc.poll() is not None:
                raise ReportError(f"the reference TiDB exited {self.proc.returncode} (its log: {self.log})")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{self.status_port}/status", timeout=2):
                    break
            if time.time() > deadline:
                raise ReportError(f"the reference TiDB did not come up in 120 s (its log: {self.log})")
            time.sleep(0.5)
        self.logins()
        print(f"reference TiDB on 127.0.0.1:{self.port} (pid {self.proc.pid}, data {self.data})", flush=True)
        return self.proc.pid

    def logins(self):
        import pymysql
        secrets = state_dir() / "secrets"
        root_pw, bench_pw = ((secrets / n).read_text().strip() for n in ("tidb-root", "sbtest"))
        with pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="", autocommit=True,
                             connect_timeout=10) as c, c.cursor() as cur:
            cur.execute("CREATE USER IF NOT EXISTS 'sbtest'@'%%' IDENTIFIED BY %s", (bench_pw,))
            cur.execute("GRANT ALL PRIVILEGES ON `sbtest%%`.* TO 'sbtest'@'%%'", ())
            cur.execute("ALTER USER 'root'@'%%' IDENTIFIED BY %s", (root_pw,))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)


def plan_of(a, ref_port, ref_status_port):
    """The duet plan of one history point: the reference arm on the reference TiDB, the candidate
    on the stack's; both prepared beforehand (prepare())."""
    return {
        "description": "tools/history-quality --duet: one history point, the stack's TiDB beside a reference TiDB",
        "workloads": [a.workload], "threads": [a.threads], "repeats": 1, "seed": 1, "prepare": False,
        "options": {"time": a.time, "warmup_time": a.warmup_time, "tables": a.tables, "table_size": a.table_size,
                    "mysql_db": a.db},
        "arms": [{"name": REF_ARM, "options": {"mysql_host": "127.0.0.1", "mysql_port": ref_port,
                                               "tidb_status_addr": f"127.0.0.1:{ref_status_port}"}},
                 {"name": CAND_ARM}],
        "reference": REF_ARM, "duet": True,
    }


def pair_of(out, plan_id):
    """(candidate manifest, reference manifest) of a finished duet plan in `out` (the accepted pair:
    a rerun's when the plan reran a disturbed one)."""
    ms = []
    for arm in (CAND_ARM, REF_ARM):
        sweep = json.loads((out / f"sweep-{plan_id}-{arm}.json").read_text())
        ms.append(json.loads((out / f"{sweep['runs'][-1]['testid']}.json").read_text()))
    return ms[0], ms[1]


def run_point(a, plan_file, plan_id, out, preexec):
    """One history point: the duet plan run by scripts/sweep (k6 and the runner on the client's core);
    returns (candidate manifest, reference manifest)."""
    import os
    env = dict(os.environ, results_dir=str(out))
    p = subprocess.run([str(ROOT / "scripts/sweep"), "--plan", str(plan_file), "--id", plan_id, "--no-report"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, preexec_fn=preexec)
    if p.returncode != 0:
        raise ReportError(f"the duet plan {plan_id} exited {p.returncode}: {(p.stdout + p.stderr)[-1500:]}")
    return pair_of(out, plan_id)


def point_line(cand, ref):
    """What a point's progress line says: both QPS, the ratio, each side's disturbance without its partner."""
    s, r = cand["steps"][0], ref["steps"][0]
    v = store.vs_ref(cand, s, ref)
    mine = disturbance.without_partner(cand, ref)["steps"][0]
    return (f"{s['qps']:.1f} QPS beside the reference's {r['qps']:.1f}: vs_ref {v:.4f}; "
            f"{disturbance.summary(mine)}")


def pool(folder, threads=None, reject_disturbed=False):
    """[(started ms, vs_ref)] of every paired run in `folder` (a plan's reference pairing,
    store.reference_runs), optionally without the disturbed ones (each judged without its partner)."""
    found = list(store.scan([folder]))
    entries, _ = store.sweep_entries(found)
    refs = store.reference_runs(entries)
    runs = {(f.parent.resolve(), m.get("testid") or f.stem): m for kind, f, m in found if kind == "run"}
    median = disturbance.canary_median(list(runs.values())) if reject_disturbed else None
    out, dropped = [], 0
    for (folder_, testid), ref_id in refs.items():
        m, ref = runs.get((folder_, testid)), runs.get((folder_, ref_id))
        if not m or not ref:
            continue
        if reject_disturbed and (disturbance.run_reasons(disturbance.without_partner(m, ref), median)
                                 or disturbance.run_reasons(disturbance.without_partner(ref, m), median)):
            dropped += 1
            continue
        for s in m["steps"]:
            v = store.vs_ref(m, s, ref)
            if v is not None and (threads is None or s.get("threads") == threads):
                out.append((store.started_ms(m), v))
    if reject_disturbed:
        print(f"{folder}: {dropped} disturbed pair(s) left out (tidbbench/disturbance.py's rule, without the "
              "partner's CPU)", file=sys.stderr, flush=True)
    return out


class Duet:
    """The reference TiDB, both databases pinned and weighted, the plan file: what collect --duet and
    e2e --duet run their points in. close() puts everything back, whatever happened."""

    def __init__(self, a, stamp, out, pin, tidb_pid):
        from tbstools import benchkit
        self.a, self.stamp, self.out, self.pin = a, stamp, Path(out), pin
        self.ref = RefTidb(a.ref_port, a.ref_status_port, stamp)
        self.weights = None
        try:
            ref_pid = self.ref.start()
            pin.pin_server(ref_pid)
            self.weights = benchkit.CpuWeights({CAND_ARM: tidb_pid, REF_ARM: ref_pid}, f"tbs-duet-{stamp}")
        except BaseException:
            self.close()
            raise
        self.plan_file = self.out / f"duet-plan-{stamp}.json"
        self.plan_file.write_text(json.dumps(plan_of(a, a.ref_port, a.ref_status_port), indent=2) + "\n")

    def point(self, i, out=None):
        out = Path(out or self.out)
        out.mkdir(parents=True, exist_ok=True)
        tag = "w" if out != self.out else ""
        return run_point(self.a, self.plan_file, f"hq-{self.stamp}-{tag}{i:03d}", out, self.pin.client_preexec())

    def close(self):
        if self.weights:
            self.weights.release()
        self.ref.stop()
