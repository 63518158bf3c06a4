"""scripts/sweep --plan FILE: two or more arms (targets, settings, options) run interleaved.

A plan (JSON):

    {"workloads": ["oltp_point_select"], "threads": [1, 2], "repeats": 5, "seed": 1,
     "options": {"time": 3, "warmup_time": 1, "tables": 1, "table_size": 2000, "mysql_db": "sbtest"},
     "reset": false, "analyze": false,
     "admin": {"user": "root", "password_file": ".stack/secrets/tidb-root"},
     "arms": [{"name": "base"},
              {"name": "no-plan-cache", "set_global": {"tidb_enable_prepared_plan_cache": "OFF"}}]}

Every arm is a sweep of its own, results/sweep-<id>-<arm>.json (so `scripts/report
sweep-<id>-<a> sweep-<id>-<b>` compares any two); results/plan-<id>.json records the plan, the
order the samples ran in and its status. Each round runs every workload once per arm, the
arms' order shuffled per round (deterministic from `seed`), so drift, caches and noisy
neighbours hit every arm alike. `set_global` variables are set (SET GLOBAL, as the `admin`
login) before each of the arm's samples; an arm that does not name a variable another arm sets
runs with the value it had when the plan started, and every such variable is restored at the
end. Run again with the same --id, an interrupted plan resumes: finished samples are kept.

A sample that the rule of tidbbench/disturbance.py calls disturbed (CPU steal, the other
processes' CPU, a slow canary, from its manifest's per-step `disturbance`) is run again at once,
at most `"reruns"` times (default 2; 0: never) and within a plan-wide cap (a fifth of the
samples, at least 2); the rejected sample is kept, under `rejected` in its arm's sweep manifest
and in the plan manifest, with why (docs/report.md, "Disturbed samples").

`"reference": ARM` pairs every other arm's sample with ARM's sample of the same workload and round:
the history divides the sample's throughput by the reference's (`vs_ref`, docs/history.md). With
`"duet": true` (the reference and exactly one other arm) a round's two samples run at once, both k6
runs waiting for one start_at, so the host's drift falls on both (the plan manifest's `order`
lists such a pair as one item, [reference's or other's first, as the round's shuffle put them]).

A plan of the workload `tpcc` (alone) runs k6/tpcc.js's samples: go-tpc's TPC-C at the plan's
`warehouses`, its thread steps and times; prepare and reset load go-tpc's tables (tpcc.js's
cleanup and prepare) instead of sysbench's, and the report is the TPC-C report (tpmC per sample
compared; docs/tpcc.md).

`"prepare": true` drops and prepares the tables (prepare.js) once per target before the first
sample (a resumed plan does not again); `"reset": true` does so before every sample. A plan that
prepares (either) creates its database when the target has none; one that does not stops before
anything runs, naming the database and the command that prepares it.

Before anything runs, a plan whose arms turn on tidb_enable_async_commit or tidb_enable_1pc and
whose workloads write stops on a target that is TiDB on unistore (the local stack's: its
`tidb_version()` says `Store: unistore`): unistore fails TiDB's own index assertion (error 8141)
under async commit and 1PC with concurrent writes, so such a run would stop minutes in. The
message names the variables and the ways around: `--drop-global` (seedplan.py), read-only
workloads (`--workloads`), or a real cluster. `"source"`
names the report a plan reproduces (plans/seed-*.json), `"targets": "required"` refuses to
run until `--arm-target` gives every arm a target. The command line may scale a plan down and
point its arms at targets: `--scale`, `--threads`, `--time`, `--warmup-time`, `--workloads`,
`--mysql-db`, `--arm-target` (tidbbench/sweep/seedplan.py).
"""
import hashlib
import json
import os
import random
import re
import sys
import time
from pathlib import Path

from tidbbench import ROOT, ReportError, contract, disturbance
from tidbbench.commands import DEFAULTS
from tidbbench.k6env import new_testid
from tidbbench.sweep import seedplan
from tidbbench.sweep import sweep as sw

KEYS = {"workloads", "threads", "repeats", "seed", "options", "reset", "analyze", "prepare_threads", "arms",
        "admin", "description", "source", "targets", "prepare", "reruns", "reference", "duet"}
ARM_KEYS = {"name", "options", "set_global", "description"}
ADMIN_KEYS = {"user", "password_file", "host", "port"}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.]{0,15}$")
# set by the plan itself, not as an option
OWN = {"workload", "threads", "testid", "results_dir", "command"}
VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# sysbench's tests that only read: no INSERT, UPDATE or DELETE (read from k6/contract.json: the
# workloads whose `tables_after` is "unchanged")
READ_ONLY = contract.read_only_workloads()
# a duet's two k6 runs start their first step this long after both were started: k6's start and
# setup (its bundle, the target's variables) take 1-2 s on 2 busy cores
DUET_LEAD_MS = 6000
# what TiDB on unistore (tidb-server --store=unistore, the local stack's) cannot take with
# concurrent writes: its index assertion fails (error 8141, "assertion failed ... assertion: Exist")
UNISTORE_UNSAFE = ("tidb_enable_async_commit", "tidb_enable_1pc")


def same_value(got, want):
    """Whether a variable's value as the server gives it is the one set: 1/ON/true and 0/OFF/false
    are one (TiDB answers ON for an enum set to 1), otherwise the text, case aside."""
    g, w = str(got).lower(), str(want).lower()
    return g == w or any(g in s and w in s for s in ({"1", "on", "true"}, {"0", "off", "false"}))


def _err(msg):
    return ReportError(msg, code=2)


def load(path):
    """The plan at `path`, checked: ReportError (exit 2) naming the bad key or value."""
    p = Path(path)
    if not p.is_file():
        raise _err(f"plan file {path} does not exist")
    try:
        plan = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise _err(f"plan {path} is not valid JSON: {e}")
    if not isinstance(plan, dict):
        raise _err(f"plan {path}: a JSON object is expected")
    for k in plan:
        if k not in KEYS:
            raise _err(f"plan {path}: unknown key '{k}' (valid: {', '.join(sorted(KEYS))})")
    workloads = plan.get("workloads")
    valid = contract.workloads() + [contract.TPCC]  # tpcc: k6/tpcc.js's samples (docs/tpcc.md)
    if not workloads or not isinstance(workloads, list):
        raise _err(f"plan {path}: 'workloads' must list at least one workload (valid: {', '.join(valid)})")
    for w in workloads:
        if w not in valid:
            raise _err(f"plan {path}: unknown workload '{w}' (valid: {', '.join(valid)})")
    if len(set(workloads)) != len(workloads):
        raise _err(f"plan {path}: 'workloads' lists a workload twice")
    if contract.TPCC in workloads and (len(workloads) > 1 or plan.get("analyze")):
        raise _err(f"plan {path}: workload {contract.TPCC} (k6/tpcc.js) runs alone in a plan, without 'analyze' "
                   f"(ANALYZE TABLE sbtest1..N: sysbench's tables); got workloads {', '.join(workloads)}"
                   + (" and analyze" if plan.get("analyze") else ""))
    threads = plan.get("threads")
    if not threads or not isinstance(threads, list) or not all(isinstance(t, int) and t >= 1 for t in threads):
        raise _err(f"plan {path}: 'threads' must be a list of thread counts >= 1, e.g. [2, 4] (got {threads!r})")
    repeats = plan.get("repeats", 1)
    if not isinstance(repeats, int) or repeats < 1:
        raise _err(f"plan {path}: invalid repeats {repeats!r}: must be >= 1")
    check_options(path, "options", plan.get("options", {}))
    if plan.get("targets", "optional") not in ("required", "optional"):
        raise _err(f"plan {path}: invalid targets {plan['targets']!r} (valid: required, optional)")
    if not isinstance(plan.get("source", ""), str):
        raise _err(f"plan {path}: 'source' must name the report the plan reproduces (got {plan['source']!r})")
    reruns = plan.get("reruns", disturbance.RERUNS_PER_SAMPLE)
    if not isinstance(reruns, int) or isinstance(reruns, bool) or not 0 <= reruns <= 9:
        raise _err(f"plan {path}: invalid reruns {reruns!r}: the reruns of a disturbed sample, 0 (none) to 9")
    for k in ("reset", "analyze", "prepare"):
        if not isinstance(plan.get(k, False), bool):
            raise _err(f"plan {path}: '{k}' must be true or false (got {plan[k]!r})")
    arms = plan.get("arms")
    if not isinstance(arms, list) or len(arms) < 2:
        raise _err(f"plan {path}: 'arms' must list two or more arms")
    names = []
    for i, arm in enumerate(arms):
        if not isinstance(arm, dict):
            raise _err(f"plan {path}: arm {i + 1} must be an object")
        for k in arm:
            if k not in ARM_KEYS:
                raise _err(f"plan {path}: arm {i + 1}: unknown key '{k}' (valid: {', '.join(sorted(ARM_KEYS))})")
        name = arm.get("name")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise _err(f"plan {path}: arm {i + 1}: invalid name {name!r} (letters, digits, '_' and '.', "
                       "at most 16)")
        if name in names:
            raise _err(f"plan {path}: two arms are named '{name}'")
        names.append(name)
        check_options(path, f"arm '{name}' options", arm.get("options", {}))
        sg = arm.get("set_global", {})
        if not isinstance(sg, dict) or not all(VAR_RE.match(str(k)) for k in sg):
            raise _err(f"plan {path}: arm '{name}': set_global must map variable names to values")
        for v in sg.values():
            if not isinstance(v, (str, int, float)) or (isinstance(v, str) and not re.match(r"^[A-Za-z0-9_.\-]*$", v)):
                raise _err(f"plan {path}: arm '{name}': set_global value {v!r} must be a number or a word")
    check_reference(path, plan, names)
    if any(arm.get("set_global") for arm in arms):
        adm = plan.get("admin")
        if not isinstance(adm, dict) or not adm.get("user"):
            raise _err(f"plan {path}: set_global needs 'admin': {{\"user\": ..., \"password_file\": ...}} "
                       "(a login allowed to SET GLOBAL)")
        for k in adm:
            if k not in ADMIN_KEYS:
                raise _err(f"plan {path}: admin: unknown key '{k}' (valid: {', '.join(sorted(ADMIN_KEYS))})")
    return plan


def check_reference(path, plan, names):
    """`"reference": ARM` names the arm whose samples the others are paired with (the history's
    `vs_ref`: a sample's throughput over its round's reference sample's, docs/history.md);
    `"duet": true` runs the two arms' samples of a round at once (it needs the reference and
    exactly two arms)."""
    ref, duet = plan.get("reference"), plan.get("duet", False)
    if ref is not None and ref not in names:
        raise _err(f"plan {path}: reference {ref!r} is not one of its arms (valid: {', '.join(names)})")
    if not isinstance(duet, bool):
        raise _err(f"plan {path}: 'duet' must be true or false (got {duet!r})")
    if duet and (ref is None or len(names) != 2):
        raise _err(f"plan {path}: 'duet' runs a reference arm and one other arm at once: it needs 'reference' "
                   f"and exactly two arms (got {len(names)} arms" + (", no reference)" if ref is None else ")"))
    if duet and contract.TPCC in plan["workloads"]:
        raise _err(f"plan {path}: 'duet' starts both arms' runs at one instant (k6 option start_at), which "
                   f"{contract.TPCC_SCRIPT} does not take: run TPC-C plans without it")


def check_options(path, where, opts):
    if not isinstance(opts, dict):
        raise _err(f"plan {path}: {where} must be an object of k6 options")
    for k in opts:
        if k in OWN:
            raise _err(f"plan {path}: {where}: option '{k}' is set by the plan itself")
        if k not in DEFAULTS:
            raise _err(f"plan {path}: {where}: unknown option '{k}' (valid: {', '.join(DEFAULTS)})")


def arm_options(plan, arm):
    o = dict(plan.get("options", {}))
    o.update(arm.get("options", {}))
    return o


def round_order(names, seed, rnd_no):
    """The arms' order in one round: a shuffle seeded by (seed, round)."""
    order = list(names)
    random.Random(f"{seed}/{rnd_no}").shuffle(order)
    return order


def target_vars(plan, target_of):
    """{target: the set_global variables of the arms that run there}: a target is asked only for
    its own arms' variables (another version may not have the others)."""
    tv = {}
    for arm in plan["arms"]:
        tv.setdefault(target_of(arm), set()).update(arm.get("set_global", {}))
    return tv


def digest(plan):
    return hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()[:16]


def connect(t, user=None, password=None):
    import pymysql
    return pymysql.connect(host=t["mysql_host"], port=int(t["mysql_port"]), user=user or t["mysql_user"],
                           password=t["mysql_password"] if password is None else password,
                           database=None if user else t["mysql_db"], autocommit=True, connect_timeout=10)


def unistore_conflict(plan, arm_names, store):
    """The message that stops a plan before it runs when the arms `arm_names` (at one target whose
    TiDB store is `store`) turn on UNISTORE_UNSAFE variables and the plan's workloads write; None
    when they can run."""
    if (store or "").lower() != "unistore":
        return None
    on = {}
    for arm in plan["arms"]:
        if arm["name"] in arm_names:
            for v, x in (arm.get("set_global") or {}).items():
                if v in UNISTORE_UNSAFE and same_value(x, 1):
                    on.setdefault(v, []).append(arm["name"])
    writes = [w for w in plan["workloads"] if w not in READ_ONLY]
    if not on or not writes:
        return None
    names = sorted(on)
    arms = sorted({a for v in names for a in on[v]})
    reads = [w for w in plan["workloads"] if w in READ_ONLY]
    return (f"arm(s) {', '.join(arms)} set {', '.join(f'{v}=ON' for v in names)}, and the target is TiDB on "
            "unistore (tidb_version(): Store: unistore, as the local stack's), which fails TiDB's index "
            "assertion (error 8141, 'assertion failed ... assertion: Exist') under async commit and 1PC with "
            f"concurrent writes: the write workload(s) {', '.join(writes)} would stop with it (sysbench does "
            "too). Run the plan against a real cluster (TiKV), or here with --drop-global "
            f"{','.join(names)} (the arms keep their other variables; the report records it)"
            + (f", or only its read-only workloads (--workloads {','.join(reads)})" if reads else
               ", or with read-only workloads only")
            + " (nothing was run)")


def tidb_store(conn):
    """'unistore', 'tikv', ... from TiDB's tidb_version() ('Store: ...' line); None for a server
    that is not TiDB (MySQL, MariaDB) or does not say."""
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT tidb_version()")
            text = str(cur.fetchone()[0])
    except Exception:  # not TiDB: no such function
        return None
    m = re.search(r"^Store:\s*(\S+)", text, re.M)
    return m.group(1) if m else None


def ensure_database(t, prepares, tpcc=False):
    """The target's database, created when missing and the plan prepares its tables; otherwise a
    ReportError naming the database and what makes it."""
    import pymysql
    try:
        connect(t).close()
        return
    except pymysql.err.OperationalError as e:
        if e.args[0] != 1049:  # ER_BAD_DB_ERROR; anything else is the caller's "cannot be reached"
            raise
    where = f"{t['mysql_host']}:{t['mysql_port']}"
    if not prepares:
        raise _err(f"database '{t['mysql_db']}' does not exist on {where}, and the plan does not prepare its "
                   "tables (\"prepare\": true or \"reset\": true): create and prepare it first "
                   f"(scripts/k6 run -e mysql_db={t['mysql_db']} "
                   + (f"-e tpcc_command=prepare -e warehouses=N {contract.TPCC_SCRIPT}" if tpcc else
                      "-e tables=N -e table_size=N k6/prepare.js")
                   + f" after CREATE DATABASE {t['mysql_db']}), or give --mysql-db (nothing was run)")
    c = connect(dict(t, mysql_db=None))
    try:
        with c.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{t['mysql_db']}`")
    except pymysql.MySQLError as e:
        raise _err(f"database '{t['mysql_db']}' does not exist on {where} and user '{t['mysql_user']}' cannot "
                   f"create it: {e.args[-1]}; create it as an admin, or give --mysql-db (nothing was run)")
    finally:
        c.close()
    print(f"plan: created database {t['mysql_db']} on {where} (the plan prepares its tables)", flush=True)


def admin_password(adm):
    pf = adm.get("password_file")
    if not pf:
        return ""
    f = Path(pf) if os.path.isabs(pf) else ROOT / pf
    try:
        return f.read_text().strip()
    except OSError as e:
        raise _err(f"plan admin: cannot read password_file {pf}: {e.strerror}")


class PlanRun:
    """One `scripts/sweep --plan` invocation: the checked plan, its targets and admin logins, the
    plan manifest (state) and each arm's sweep manifest, and the rounds run."""

    def __init__(self, a, argv):
        self.a, self.argv = a, argv
        plan = load(a.plan)
        plan, self.overrides, self.scaled = seedplan.apply(plan, a.plan, a)
        if a.repeats != 1:
            plan["repeats"] = a.repeats
        self.plan = plan
        self.results = Path(a.results).resolve()
        self.results.mkdir(parents=True, exist_ok=True)
        try:
            base = a.id or new_testid()
        except RuntimeError as e:
            raise _err(f"no plan id: {e}") from e
        self.base = base[len("plan-"):] if base.startswith("plan-") else base
        self.names = [arm["name"] for arm in plan["arms"]]
        self.repeats = plan.get("repeats", 1)
        self.arms = {arm["name"]: arm for arm in plan["arms"]}
        suffix = f"-x{plan.get('reruns', disturbance.RERUNS_PER_SAMPLE)}" if plan.get("reruns", 1) else ""
        for w in plan["workloads"]:
            for n in self.names:
                tid = sw.sample_testid(f"{self.base}-{n}", w, self.repeats, self.repeats) + suffix
                if not contract.testid_re().match(tid):
                    raise _err(f"invalid --id {a.id}: testid '{tid}' must be letters, digits, . _ - "
                               f"(at most {contract.testid_max()})")
        self.ppath = self.results / f"plan-{self.base}.json"
        self.state = None
        if self.ppath.exists():
            self.state = json.loads(self.ppath.read_text())
            if self.state.get("digest") != digest(plan):
                raise _err(f"plan '{self.base}' exists ({self.ppath}) with another plan; choose another --id")
            if self.state.get("status") == "complete":
                raise _err(f"plan '{self.base}' is complete ({self.ppath}); choose another --id")
        self.targets, self.admins, self.logins = {}, {}, {}

    def target_of(self, arm):
        t = sw.target({k: str(v) for k, v in arm_options(self.plan, arm).items()}, None)
        return (t["mysql_host"], t["mysql_port"])

    def check_arms(self):
        """Every arm reachable, with options k6 accepts, before anything runs; the variables set
        on a target are those of the arms that run there (another version may not have them)."""
        plan = self.plan
        self.tvars = target_vars(plan, self.target_of)
        for arm in plan["arms"]:
            opts = arm_options(plan, arm)
            common = [x for k, v in opts.items() for x in ("-e", f"{k}={v}")]
            bad = sw.k6_check(common, plan["workloads"], ",".join(map(str, plan["threads"])))
            if bad:
                raise _err(f"arm '{arm['name']}': {bad} (nothing was run)")
            t = sw.target({k: str(v) for k, v in opts.items()}, None)
            self.targets[arm["name"]] = t
            key = (t["mysql_host"], t["mysql_port"])
            try:
                c = connect(dict(t, mysql_db=None))
                store = tidb_store(c)
                c.close()
                conflict = unistore_conflict(plan, [x["name"] for x in plan["arms"] if self.target_of(x) == key], store)
                if conflict:
                    raise _err(f"{t['mysql_host']}:{t['mysql_port']}: {conflict}")
                ensure_database(t, bool(plan.get("prepare") or plan.get("reset")), contract.TPCC in plan["workloads"])
            except ReportError:
                raise
            except Exception as e:  # pymysql's errors, refused ports, unknown hosts
                raise _err(f"arm '{arm['name']}' cannot be reached: {t['mysql_host']}:{t['mysql_port']} as user "
                           f"'{t['mysql_user']}' (database '{t['mysql_db']}'): {getattr(e, 'args', [e])[-1]} "
                           "(nothing was run)")
            if sorted(self.tvars[key]) and key not in self.admins:
                self.admin_login(arm, t, key)

    def admin_login(self, arm, t, key):
        """The admin connection to target `key` and its set_global variables' values now."""
        adm = self.plan["admin"]
        at = dict(t, mysql_host=adm.get("host", t["mysql_host"]), mysql_port=adm.get("port", t["mysql_port"]))
        try:
            c = connect(at, user=adm["user"], password=admin_password(adm))
        except ReportError:
            raise
        except Exception as e:
            raise _err(f"arm '{arm['name']}': the admin login '{adm['user']}' cannot connect to "
                       f"{at['mysql_host']}:{at['mysql_port']}: {getattr(e, 'args', [e])[-1]} "
                       "(nothing was run)")
        with c.cursor() as cur:
            orig = {}
            for v in sorted(self.tvars[key]):
                try:
                    cur.execute(f"SELECT @@GLOBAL.{v}")
                    orig[v] = str(cur.fetchone()[0])
                except Exception as e:
                    raise _err(f"arm '{arm['name']}': unknown variable '{v}' in set_global: "
                               f"{getattr(e, 'args', [e])[-1]} (nothing was run)")
        self.admins[key] = (c, orig)
        self.logins[key] = (at, adm["user"], admin_password(adm))

    def open_manifests(self):
        """The plan manifest (a resumed plan's, or a new one) and each arm's sweep manifest."""
        plan, base = self.plan, self.base
        if self.state is not None:
            # a resumed plan: the values from before the plan started, not what an interrupted run left
            for (h, p), (c, orig) in self.admins.items():
                orig.update(self.state.get("original_globals", {}).get(f"{h}:{p}", {}))
        else:
            self.state = {"plan": f"plan-{base}", "digest": digest(plan), "file": str(self.a.plan), "spec": plan,
                          "overrides": self.overrides, "scaled": self.scaled, "prepared": [],
                          "created": sw.now_ms(), "status": "running",
                          "arms": {n: f"sweep-{base}-{n}" for n in self.names}, "order": [], "original_globals": {}}
            for (h, p), (_, orig) in self.admins.items():
                self.state["original_globals"][f"{h}:{p}"] = orig
        self.state["status"] = "running"
        sw.save_json(self.ppath, self.state)
        self.sweeps = {}
        for n in self.names:
            sp = self.results / f"sweep-{base}-{n}.json"
            if sp.exists():
                self.sweeps[n] = json.loads(sp.read_text())
            else:
                opts = arm_options(plan, self.arms[n])
                self.sweeps[n] = {
                    "sweep": f"sweep-{base}-{n}", "plan": f"plan-{base}", "arm": n, "status": "running",
                    "created": sw.now_ms(), "finished": None,
                    "command": sw.scrub_argv(["scripts/sweep", *self.argv]),
                    "workloads": plan["workloads"], "threads": plan["threads"], "repeats": self.repeats,
                    "options": {k: ("***" if k == "mysql_password" else v) for k, v in opts.items()},
                    "set_global": self.arms[n].get("set_global", {}),
                    "reference": plan.get("reference"), "duet": bool(plan.get("duet")),
                    "scaled": self.scaled, "source": plan.get("source"),
                    "stack": sw.stack_commit(), "analyze": bool(plan.get("analyze")), "reset": bool(plan.get("reset")),
                    "prepare_threads": plan.get("prepare_threads", 4) if plan.get("reset") else None, "runs": []}
            self.save_sweep(n)

    def save_sweep(self, n):
        sw.save_json(self.results / f"sweep-{self.base}-{n}.json", self.sweeps[n])

    def apply(self, n):
        """The arm's set_global variables on its target (the others' back to their values)."""
        t = self.targets[n]
        sg_vars = sorted(self.tvars[(t["mysql_host"], t["mysql_port"])])
        if not sg_vars:
            return
        c, orig = self.admins[(t["mysql_host"], t["mysql_port"])]
        want = dict(orig)
        want.update({k: str(v) for k, v in self.arms[n].get("set_global", {}).items()})
        with c.cursor() as cur:
            for v in sg_vars:
                cur.execute(f"SET GLOBAL {v} = %s", (want[v],))
                cur.execute(f"SELECT @@GLOBAL.{v}")
                got = str(cur.fetchone()[0])
                if not same_value(got, want[v]):
                    raise ReportError(f"arm '{n}': SET GLOBAL {v} = {want[v]} left it at {got} (the target's "
                                      f"{v} does not take that value: a variable of another TiDB version?)")
        print(f"plan: arm {n}: " + ", ".join(f"{v}={want[v]}" for v in sg_vars), flush=True)

    def run_rounds(self):
        """Every sample not run yet, round by round, the arms in each round's seeded order;
        returns how many were kept from before."""
        plan = self.plan
        done = {r.get("sample", r["testid"]) for s in self.sweeps.values() for r in s["runs"]}
        skipped = 0

        class Flags:  # what run_sample reads of the command line
            reset = bool(plan.get("reset"))
            analyze = bool(plan.get("analyze"))
            prepare_threads = plan.get("prepare_threads", 4)
        for rnd in range(1, self.repeats + 1):
            order = round_order(self.names, plan.get("seed", 1), rnd)
            for w in plan["workloads"]:
                if plan.get("duet"):
                    tids = [sw.sample_testid(f"{self.base}-{n}", w, rnd, self.repeats) for n in order]
                    if all(t in done for t in tids):
                        skipped += len(tids)
                        continue
                    self.run_duet(order, w, rnd, tids, Flags)
                    self.state["order"].append(tids)
                    sw.save_json(self.ppath, self.state)
                    continue
                for n in order:
                    tid = sw.sample_testid(f"{self.base}-{n}", w, rnd, self.repeats)
                    if tid in done:
                        skipped += 1
                        continue
                    self.run_sample(n, w, rnd, tid, Flags)
                    self.state["order"].append(tid)
                    sw.save_json(self.ppath, self.state)
        return skipped

    def run_duet(self, order, w, rnd, tids, flags):
        """The two arms' samples of one round and workload at once (`"duet": true`): both k6 runs
        start their first step at the same instant (k6 option start_at), so whatever the host does
        during the window falls on both alike (duet benchmarking: Bulej et al., "Duet Benchmarking:
        Improving Measurement Accuracy in the Cloud", Empirical Software Engineering 2020). Each
        sample's disturbance is judged without its partner's CPU (the partner's database and k6 are
        the pair's own load, not a neighbour); a disturbed pair is rerun as a pair, as run_sample
        reruns one sample. An interrupted pair runs again whole."""
        per_sample = self.plan.get("reruns", disturbance.RERUNS_PER_SAMPLE)
        samples = self.repeats * len(self.plan["workloads"]) * len(self.names)
        rejected = self.state.setdefault("rejected", [])
        tries = sum(1 for r in rejected if r["sample"] == tids[0])
        while True:
            ids = [t if not tries else f"{t}-x{tries}" for t in tids]
            entries = [{"workload": w, "testid": i, "repeat": rnd, "arm": n, "duet_with": j}
                       for n, i, j in zip(order, ids, ids[::-1])]
            if tries:
                for e, t in zip(entries, tids):
                    e["sample"] = t
            self.run_pair(order, entries, flags)
            why = self.duet_disturbed(ids)
            if why and tries < per_sample and len(rejected) + 2 <= disturbance.rerun_cap(samples):
                for e, t in zip(entries, tids):
                    e["rejected"] = "; ".join(why)
                    self.sweeps[e["arm"]].setdefault("rejected", []).append(e)
                    rejected.append({"sample": t, "testid": e["testid"], "why": e["rejected"]})
                    self.save_sweep(e["arm"])
                print(f"plan: duet {' + '.join(ids)} is disturbed ({'; '.join(why)}): rerun "
                      f"{tries + 1} of at most {per_sample}", flush=True)
                sw.save_json(self.ppath, self.state)
                tries += 1
                continue
            for e in entries:
                if why:
                    e["disturbed"] = "; ".join(why)  # kept: no rerun left
                self.sweeps[e["arm"]]["runs"].append(e)
                self.save_sweep(e["arm"])
            return

    def run_pair(self, order, entries, flags):
        """Both runs of a duet, each arm's reset, ANALYZE and variables first, then the two k6
        processes started together, waiting for the same start_at."""
        commons = []
        for n, e in zip(order, entries):
            opts = arm_options(self.plan, self.arms[n])
            common = [x for k, v in opts.items() for x in ("-e", f"{k}={v}")]
            sw.prepare_sample(e, common, self.results, flags, int(opts.get("tables") or DEFAULTS["tables"]),
                              lambda n=n: self.targets[n], before=lambda n=n: self.apply(n))
            commons.append(common)
        start_at = sw.now_ms() + DUET_LEAD_MS
        procs = []
        for e, common in zip(entries, commons):
            e["host"] = sw.host_info()
            e["started"] = sw.now_ms()
            procs.append(sw.k6_start(sw.sample_args(e, common, ",".join(map(str, self.plan["threads"])),
                                                    ["-e", f"start_at={start_at}"]), self.results))
        rcs = sw.wait_all(procs)
        for e, rc in zip(entries, rcs):
            e["finished"] = sw.now_ms()
            sw.check_sample(e, rc, self.results)

    def duet_disturbed(self, ids):
        """Why a duet pair is disturbed: each sample's reasons with its partner's CPU taken out of
        the other processes' (disturbance.without_partner), its canaries against the plan's median."""
        ms = [self.manifest(r["testid"]) for s in self.sweeps.values() for r in s["runs"]]
        pair = [self.manifest(i) for i in ids]
        median = disturbance.canary_median([x for x in ms + pair if x])
        out = []
        for i, (m, partner) in enumerate(zip(pair, pair[::-1])):
            out += [f"{ids[i]}: {r}" for r in disturbance.run_reasons(disturbance.without_partner(m, partner), median)]
        return out

    def run_sample(self, n, w, rnd, tid, flags):
        """One sample of arm n, rerun while the rule of tidbbench/disturbance.py calls it
        disturbed, at most the plan's `reruns` times and within the plan-wide cap; a rejected
        sample stays in the arm's sweep manifest under `rejected`, with why."""
        opts = arm_options(self.plan, self.arms[n])
        common = [x for k, v in opts.items() for x in ("-e", f"{k}={v}")]
        tables = int(opts.get("tables") or DEFAULTS["tables"])
        per_sample = self.plan.get("reruns", disturbance.RERUNS_PER_SAMPLE)
        samples = self.repeats * len(self.plan["workloads"]) * len(self.names)
        rejected = self.state.setdefault("rejected", [])
        tries = sum(1 for r in rejected if r["sample"] == tid)
        while True:
            testid = tid if not tries else f"{tid}-x{tries}"
            entry = {"workload": w, "testid": testid, "repeat": rnd, "arm": n}
            if tries:
                entry["sample"] = tid
            sw.run_sample(entry, common, ",".join(map(str, self.plan["threads"])), self.results, flags, tables,
                          lambda: self.targets[n], before=lambda: self.apply(n))
            why = self.disturbed(testid)
            if why and tries < per_sample and len(rejected) < disturbance.rerun_cap(samples):
                entry["rejected"] = "; ".join(why)
                self.sweeps[n].setdefault("rejected", []).append(entry)
                rejected.append({"sample": tid, "testid": testid, "why": entry["rejected"]})
                print(f"plan: sample {testid} is disturbed ({entry['rejected']}): rerun "
                      f"{tries + 1} of at most {per_sample}", flush=True)
                self.save_sweep(n)
                sw.save_json(self.ppath, self.state)
                tries += 1
                continue
            if why:
                entry["disturbed"] = "; ".join(why)  # kept: no rerun left
            self.sweeps[n]["runs"].append(entry)
            self.save_sweep(n)
            return

    def disturbed(self, testid):
        """Why the sample `testid` is disturbed, its canaries against the median of every canary
        the plan's accepted samples and it recorded; [] when it is not."""
        ms = [self.manifest(r["testid"]) for s in self.sweeps.values() for r in s["runs"]]
        m = self.manifest(testid)
        return disturbance.run_reasons(m, disturbance.canary_median([x for x in ms + [m] if x]))

    def manifest(self, testid):
        try:
            return json.loads((self.results / f"{testid}.json").read_text())
        except (OSError, json.JSONDecodeError):
            return None

    def fail(self, e):
        state = self.state
        state["status"] = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
        state["error"] = str(e) or "interrupted"
        sw.save_json(self.ppath, state)
        for n in self.names:
            self.sweeps[n]["status"] = state["status"]
            self.save_sweep(n)
        print(f"error: plan plan-{self.base} {state['status']}: {state['error']} (run it again with --id {self.base} "
              "to resume; finished samples are kept)", file=sys.stderr)
        return 130 if isinstance(e, KeyboardInterrupt) else getattr(e, "code", 1) or 1

    def finish(self, t0, skipped):
        state = self.state
        for n in self.names:
            self.sweeps[n]["status"] = "complete"
            self.sweeps[n]["finished"] = sw.now_ms()
            self.save_sweep(n)
        state["status"] = "complete"
        state["finished"] = sw.now_ms()
        state["seconds"] = round((state["finished"] - state["created"]) / 1000, 1)  # from the start, resumes included
        sw.save_json(self.ppath, state)
        reruns = len(state.get("rejected", []))
        print(f"plan plan-{self.base} done: {time.time() - t0:.0f} s this time, {state['seconds']:.0f} s since it "
              f"started ({skipped} sample(s) kept from before{f', {reruns} rerun as disturbed' if reruns else ''}): "
              f"arms {', '.join(state['arms'].values())} (manifest {self.ppath})", flush=True)


def run_plan(a, argv):
    r = PlanRun(a, argv)
    r.check_arms()
    r.open_manifests()
    t0 = time.time()
    try:
        if r.plan.get("prepare"):
            prepare_once(r.plan, r.arms, r.names, r.targets, r.state, r.ppath, r.results, sw)
        skipped = r.run_rounds()
    except (ReportError, KeyboardInterrupt) as e:
        return r.fail(e)
    finally:
        restore(r.admins, r.logins)
    r.finish(t0, skipped)
    if a.no_report:
        return 0
    import subprocess
    return subprocess.run(sw.report_cmd(a, r.results, [r.state["arms"][r.names[0]], r.state["arms"][r.names[1]]])).returncode


def prepare_once(plan, arms, names, targets, state, ppath, results, sw):
    """`"prepare": true`: the tables dropped and prepared once per target (host, port, database)
    before the first sample; a resumed plan skips the targets it prepared."""
    for n in names:
        t = targets[n]
        key = f"{t['mysql_host']}:{t['mysql_port']}/{t['mysql_db']}"
        if key in state.setdefault("prepared", []):
            continue
        common = [x for k, v in arm_options(plan, arms[n]).items() for x in ("-e", f"{k}={v}")]
        t0 = time.time()
        for what, args in sw.prepare_commands(plan["workloads"][0], common, plan.get("prepare_threads", 4)):
            if sw.k6(args, results) != 0:
                raise ReportError(f"prepare for arm '{n}' ({key}): {what} failed")
        print(f"plan: prepared {key} for arm {n} in {time.time() - t0:.0f} s", flush=True)
        state["prepared"].append(key)
        sw.save_json(ppath, state)


def restore(admins, logins, wait_s=120):
    """Puts every set_global variable back to its value from before the plan; when the server
    went away (restarted), retries a fresh admin connection for up to wait_s seconds."""
    for key, (c, orig) in admins.items():
        deadline = time.time() + wait_s
        while True:
            try:
                if c is None:
                    at, user, pw = logins[key]
                    c = connect(at, user=user, password=pw)
                with c.cursor() as cur:
                    for v, val in orig.items():
                        cur.execute(f"SET GLOBAL {v} = %s", (val,))
                c.close()
                break
            except Exception as e:
                c = None
                if time.time() > deadline:
                    print(f"warning: could not restore the global variables of {key[0]}:{key[1]} ({orig}): {e}",
                          file=sys.stderr)
                    break
                time.sleep(2)
