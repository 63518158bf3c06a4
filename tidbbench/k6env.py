""".stack/k6.env (written by scripts/stack up: remote write, the target, its password), read in
one place for Python. For k6, our launcher core reads the same file (`k6 x tbs run --stack-env`,
readEnvFile in k6/ext/launch/target.go), as scripts/k6 runs it."""
import json
import os
import subprocess
from pathlib import Path

from tidbbench import ROOT


def state_dir():
    return Path(os.environ.get("TBS_STATE", ROOT / ".stack"))


def read_k6_env(path=None):
    """NAME -> value of every `NAME=value` line (comments and blank lines skipped; the value is
    everything after the first '='). {} when the file is not there (no local stack)."""
    f = Path(path) if path else state_dir() / "k6.env"
    out = {}
    if f.is_file():
        for line in f.read_text().splitlines():
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                out[k] = v
    return out


def new_testid():
    """A new testid from our k6's launcher core (`bin/k6 x tbs testid`, k6/ext/launch: the one
    place testids are made); K6_BIN names another build."""
    k6 = os.environ.get("K6_BIN") or str(ROOT / "bin/k6")
    try:
        p = subprocess.run([k6, "x", "tbs", "testid"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise RuntimeError(f"{k6}: {e}: run scripts/build k6") from e
    if p.returncode != 0 or not p.stdout.strip():
        raise RuntimeError(f"{k6} x tbs testid failed ({p.returncode}): {p.stderr.strip()[-300:]}")
    return p.stdout.strip()


def target_settings(opts):
    """Where k6 connects with these -e options (NAME -> value), as our k6's launcher core
    assembles it for scripts/k6 (`bin/k6 x tbs target`: the options, then the environment,
    then .stack/k6.env; a password given by the options or the environment replaces the
    stack's): {mysql_host, mysql_port, mysql_user, mysql_password, mysql_db}. The options go on
    stdin, never as arguments (they may hold the password)."""
    k6 = os.environ.get("K6_BIN") or str(ROOT / "bin/k6")
    args = [k6, "x", "tbs", "target", "--stack-env", str(state_dir() / "k6.env"), str(ROOT / "k6/oltp.js")]
    try:
        p = subprocess.run(args, input=json.dumps({k: str(v) for k, v in opts.items()}), capture_output=True,
                           text=True, timeout=60)
    except OSError as e:
        raise RuntimeError(f"{k6}: {e}: run scripts/build k6") from e
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().removeprefix("error: ")[-500:])
    return json.loads(p.stdout)
