"""A plan's method at the user's scale and on the user's targets (issue #23 step 5).

The seed plans (plans/seed-*.json) are the published reports' methods at full size: 16 or 32
tables of 10,000,000 rows, 150..3,072 threads, 5 or 20 minutes a step. On the command line of
`scripts/sweep --plan FILE`:

- `--scale F` (0 < F <= 1) multiplies the rows per table (`table_size`) by F, rounded, at least
  MIN_ROWS (or the plan's own size when that is smaller); a TPC-C plan's `warehouses` instead
  (rounded, at least 1: plans/tpcc-pingcap.json). Only the size: the table count, the
  thread steps and the times stay the plan's unless
- `--threads 1,2`, `--time S`, `--warmup-time S` replace the plan's thread steps and times
  (150..1,200 threads are not something a laptop can honestly run), `--workloads W1,W2` runs a
  subset of the plan's workloads in the plan's order and `--mysql-db DB` another database;
- `--drop-global VAR[,VAR]` leaves those `set_global` variables out of every arm (the arms keep
  their others), e.g. `tidb_enable_async_commit,tidb_enable_1pc`, which the local stack's
  unistore cannot take with concurrent writes (plan.py stops such a plan before it runs);
- `--arm-target ARM=HOST:PORT` (once per arm) points an arm at its target, `--arm-target
  all=HOST:PORT` every arm at one target (an A/A of the method). A plan with
  `"targets": "required"` (the seed plans) does not run until every arm has one.

Every value is checked before anything runs (ReportError, exit 2, naming the value and the
valid ones); what was changed is recorded in results/plan-<id>.json (`overrides`, `scaled`) and
in every arm's sweep manifest (`scaled`), which the report prints.
"""
import copy
import re

from tidbbench import ReportError, contract
from tidbbench.commands import DEFAULTS

MIN_ROWS = 1000
ALL = "all"


def _err(msg):
    return ReportError(msg, code=2)


def parse_scale(text):
    """--scale's value as a float in (0, 1]; ReportError naming the value otherwise."""
    try:
        f = float(text)
    except (TypeError, ValueError):
        f = None
    if f is None or not (0 < f <= 1) or f != f:
        raise _err(f"invalid --scale {text}: a number F with 0 < F <= 1, the fraction of the plan's rows per "
                   "table (e.g. 0.001: 10,000,000 rows become 10,000)")
    return f


def scaled_rows(rows, scale):
    """rows x scale, rounded, at least MIN_ROWS (or `rows` itself when it is below that)."""
    return max(min(MIN_ROWS, rows), int(round(rows * scale)))


def parse_arm_targets(specs, names):
    """['ARM=HOST:PORT', ...] -> {arm: (host, port)}; 'all=HOST:PORT' names every arm."""
    out = {}
    valid = ", ".join(names)
    for spec in specs or []:
        arm, sep, addr = spec.partition("=")
        if not sep or not arm:
            raise _err(f"invalid --arm-target {spec}: write ARM=HOST:PORT (arms: {valid}; or {ALL}=HOST:PORT "
                       "for every arm)")
        if arm != ALL and arm not in names:
            raise _err(f"--arm-target {spec}: unknown arm '{arm}' (valid: {valid}, or {ALL} for every arm)")
        m = re.match(r"^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9_.\-]+)):(\d{1,5})$", addr)
        if not m or not 1 <= int(m.group(3)) <= 65535:
            raise _err(f"invalid --arm-target {spec}: the target must be HOST:PORT, e.g. {arm}=10.0.1.5:4000 "
                       "(port 1-65535)")
        host = m.group(1) or m.group(2)
        for n in (names if arm == ALL else [arm]):
            if n in out and out[n] != (host, int(m.group(3))):
                raise _err(f"--arm-target {spec}: arm '{n}' is given two targets")
            out[n] = (host, int(m.group(3)))
    return out


def _threads(text):
    if not re.match(r"^\d+(,\d+)*$", (text or "").replace(" ", "")) or any(int(t) < 1 for t in text.split(",")):
        raise _err(f"invalid --threads {text}: thread counts >= 1, comma-separated (e.g. 1,2)")
    return [int(t) for t in text.replace(" ", "").split(",")]


def _int(flag, v, low):
    if v is not None and v < low:
        raise _err(f"invalid --{flag} {v}: must be >= {low}")
    return v


def fmt_rows(n):
    return f"{int(n):,}"


def scale_warehouses(opts, f, text):
    """A TPC-C plan's size is its warehouses (go-tpc's --warehouses): x f, rounded, at least 1;
    the note the report prints."""
    wh = int(opts.get("warehouses") or DEFAULTS["warehouses"])
    opts["warehouses"] = max(1, int(round(wh * f)))
    return (f"{fmt_rows(opts['warehouses'])} warehouse{'' if opts['warehouses'] == 1 else 's'} "
            f"(plan: {fmt_rows(wh)}, --scale {text})")


def apply(plan, path, a):
    """The plan as the command line changes it: (new plan, overrides, scaled text or None).
    `a` is scripts/sweep's parsed arguments. Raises ReportError (exit 2) before anything runs."""
    plan = copy.deepcopy(plan)
    names = [arm["name"] for arm in plan["arms"]]
    overrides = {}
    opts = plan.setdefault("options", {})
    was = {"tables": int(opts.get("tables") or DEFAULTS["tables"]),
           "table_size": int(opts.get("table_size") or DEFAULTS["table_size"]),
           "threads": list(plan["threads"]), "time": opts.get("time", DEFAULTS["time"]),
           "warmup_time": opts.get("warmup_time", DEFAULTS["warmup_time"]), "workloads": list(plan["workloads"])}
    notes = []
    if getattr(a, "scale", None) is not None and contract.TPCC in plan["workloads"]:
        overrides["scale"] = parse_scale(a.scale)
        notes.append(scale_warehouses(opts, overrides["scale"], a.scale))
    elif getattr(a, "scale", None) is not None:
        f = parse_scale(a.scale)
        rows = scaled_rows(was["table_size"], f)
        opts["table_size"] = rows
        overrides["scale"] = f
        notes.append(f"{was['tables']} tables x {fmt_rows(rows)} rows (plan: {was['tables']} x "
                     f"{fmt_rows(was['table_size'])}, --scale {a.scale})")
    if getattr(a, "threads", None):
        plan["threads"] = _threads(a.threads)
        overrides["threads"] = plan["threads"]
        notes.append(f"threads {', '.join(map(str, plan['threads']))} (plan: {', '.join(map(str, was['threads']))})")
    for flag, key in (("time", "time"), ("warmup_time", "warmup_time")):
        v = _int(flag.replace("_", "-"), getattr(a, flag, None), 1 if key == "time" else 0)
        if v is not None:
            opts[key] = v
            overrides[key] = v
            notes.append(f"{key} {v} s (plan: {was[key]} s)")
    if getattr(a, "workloads", None):
        want = [w.strip() for w in a.workloads.split(",") if w.strip()]
        bad = [w for w in want if w not in plan["workloads"]]
        if bad or not want:
            raise _err(f"--workloads: '{bad[0] if bad else a.workloads}' is not one of the plan's workloads "
                       f"(valid: {', '.join(plan['workloads'])})")
        plan["workloads"] = [w for w in plan["workloads"] if w in want]
        overrides["workloads"] = plan["workloads"]
        notes.append(f"workloads {', '.join(plan['workloads'])} (plan: {', '.join(was['workloads'])})")
    if getattr(a, "mysql_db", None):
        if not re.match(r"^[A-Za-z0-9_]{1,64}$", a.mysql_db):
            raise _err(f"invalid --mysql-db {a.mysql_db}: letters, digits and _ (at most 64)")
        opts["mysql_db"] = a.mysql_db
        overrides["mysql_db"] = a.mysql_db
    if getattr(a, "drop_global", None):
        drop = [v.strip() for v in a.drop_global.split(",") if v.strip()]
        setg = sorted({v for arm in plan["arms"] for v in (arm.get("set_global") or {})})
        bad = [v for v in drop if v not in setg] or ([] if drop else [a.drop_global])
        if bad:
            raise _err(f"--drop-global: '{bad[0]}' is not a variable the plan's arms set "
                       f"(valid: {', '.join(setg) or 'none: the plan sets no variables'})")
        for arm in plan["arms"]:
            sg = {k: v for k, v in (arm.get("set_global") or {}).items() if k not in drop}
            if "set_global" in arm:
                arm["set_global"] = sg
        overrides["drop_global"] = drop
        notes.append(f"set_global without {', '.join(drop)} (plan: sets them)")
    targets = parse_arm_targets(getattr(a, "arm_target", None), names)
    if plan.get("targets") == "required":
        missing = [n for n in names if n not in targets]
        if missing:
            raise _err(f"plan {path} needs a target for every arm; missing: {', '.join(missing)}. Give "
                       + " ".join(f"--arm-target {n}=HOST:PORT" for n in names)
                       + f" (or --arm-target {ALL}=HOST:PORT: every arm at one target, an A/A of the method)")
    for arm in plan["arms"]:
        if arm["name"] in targets:
            host, port = targets[arm["name"]]
            arm.setdefault("options", {}).update(mysql_host=host, mysql_port=port)
    if targets:
        overrides["arm_targets"] = {n: f"{h}:{p}" for n, (h, p) in targets.items()}
    return plan, overrides, ("; ".join(notes) or None)
