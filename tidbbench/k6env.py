""".stack/k6.env (written by scripts/stack up: remote write, the target, its password), read in
one place for Python. scripts/k6 exports the same file's lines for k6 itself."""
import os
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
