"""How scripts/report and scripts/sweep start (standard library only): in the project's venv,
with the pinned packages of requirements.txt installed, they run at once; otherwise they first
call the one venv bootstrap every script shares (scripts/lib/common.sh's ensure_venv, which
creates or updates .stack/venv with this package and its pinned requirements), then run again
with the venv's Python."""
import importlib
import os
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from . import ROOT

REQUIREMENTS = Path(__file__).resolve().parent / "requirements.txt"


def venv_dir():
    return Path(os.environ.get("TBS_STATE", ROOT / ".stack")) / "venv"


def missing_requirements():
    """The pinned `name==version` lines of requirements.txt this Python does not have."""
    out = []
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, want = line.split("==")
        try:
            if version(name) != want:
                out.append(line)
        except PackageNotFoundError:
            out.append(line)
    return out


def run(module, script):
    """Run tbsreport.<module>.main() in the venv; `script` is the command's file (re-executed)."""
    venv = venv_dir()
    in_venv = Path(sys.prefix).resolve() == venv.resolve()
    missing = missing_requirements() if in_venv else ["(not in the venv)"]
    if missing:
        if os.environ.get("TBS_REEXEC"):
            sys.exit(f"error: {script} re-ran itself in {venv}, which still lacks {', '.join(missing)}")
        p = subprocess.run(["bash", "-c", '. "$1/scripts/lib/common.sh" && ensure_venv', "ensure_venv", str(ROOT)],
                           stdout=sys.stderr)
        if p.returncode != 0:
            sys.exit(f"error: could not set up the Python venv {venv} (scripts/lib/common.sh ensure_venv "
                     f"exited {p.returncode})")
        os.environ["TBS_REEXEC"] = "1"
        python = str(venv / "bin/python")
        os.execv(python, [python, script, *sys.argv[1:]])
    sys.exit(importlib.import_module(f"tbsreport.{module}").main())
