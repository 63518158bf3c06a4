"""The exact commands of a run, rebuilt from its manifest's options (never a password)."""
import shlex

from tidbbench import contract

# The options and their defaults: k6/contract.json, which k6/lib/config.js reads too (one place).
DEFAULTS = contract.defaults()

TARGET = ["mysql_host", "mysql_port", "mysql_user", "mysql_db"]
# always shown for a run, in this order (the seeds' commands show these)
RUN_FIRST = ["workload", *TARGET, "preset", "tables", "table_size", "threads", "time", "warmup_time"]
# prepare.js: what shapes the tables
PREPARE_KEYS = [*TARGET, "preset", "tables", "table_size", "mysql_storage_engine", "create_table_options",
                "auto_inc", "secondary", "create_secondary"]
# never in a rebuilt command: secrets, where files go, prepare.js-only switches, the run's identity
NEVER = {"mysql_password", "results_dir", "command", "recreate", "prepare_batch", "prepare_mode", "testid",
         "start_at"}
# options that only prepare.js reads
PREPARE_ONLY = {"mysql_storage_engine", "create_table_options", "create_secondary"}


def value_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    return str(v)


def is_default(k, v):
    if k not in DEFAULTS:
        return False
    d = DEFAULTS[k]
    if isinstance(d, float) or isinstance(v, float):
        try:
            return float(v) == float(d)
        except (TypeError, ValueError):
            return False
    return v == d


def run_options(opts):
    """[(name, value)] for `k6/oltp.js`: the always-shown ones, then every other option that
    differs from its default."""
    out = []
    for k in RUN_FIRST:
        if k not in opts:
            continue
        if k == "preset" and not opts[k]:
            continue
        out.append((k, opts[k]))
    shown = {k for k, _ in out}
    for k, v in opts.items():
        if k in shown or k in NEVER or k in PREPARE_ONLY or is_default(k, v):
            continue
        if k == "version" and not v:
            continue
        out.append((k, v))
    return out


def prepare_options(opts, threads=None):
    out = []
    for k in PREPARE_KEYS:
        if k not in opts:
            continue
        if k in TARGET or k in ("tables", "table_size"):
            out.append((k, opts[k]))
        elif not is_default(k, opts[k]):
            out.append((k, opts[k]))
    if threads:
        out.append(("threads", threads))
    return out


def k6_command(pairs, script):
    """A multi-line shell command like the seeds' (`\\` continuations)."""
    lines = ["scripts/k6 run"]
    for k, v in pairs:
        if k == "mysql_password":
            continue
        lines.append(f"-e {shlex.quote(f'{k}={value_text(v)}')}")
    lines.append(script)
    return " \\\n    ".join(lines)


def scrub_argv(argv):
    """argv with any password value replaced (for sweep manifests and reports)."""
    out, hide_next = [], False
    for a in argv:
        if hide_next:
            out.append("mysql_password=***" if a.startswith("mysql_password=") else "***")
            hide_next = False
            continue
        if a.startswith("mysql_password=") or a.startswith("--mysql-password="):
            out.append(a.split("=", 1)[0] + "=***")
        elif a == "--mysql-password":
            out.append(a)
            hide_next = True
        elif a in ("-e", "--env"):
            out.append(a)
            hide_next = False
        else:
            out.append(a)
    # `-e mysql_password=x` is covered by the startswith() above
    return out
