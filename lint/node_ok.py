"""python3 lint/node_ok.py VERSION: exit 0 when Node VERSION (as `node --version` prints it, v22.20.0)
satisfies the `engines.node` range of each package lint/package.json names, as lint/package-lock.json
records them (ESLint 10: ^20.19.0 || ^22.13.0 || >=24), else 1, naming what it needs on stderr.
scripts/lib/common.sh's ensure_node asks it of the Node on PATH: Debian bookworm's is 18.
The range forms npm writes there: alternatives joined by ||, each ^X[.Y[.Z]] or >=X[.Y[.Z]]."""
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def satisfies(have, rng):
    for alt in rng.split("||"):
        m = re.fullmatch(r"(\^|>=)\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?", alt.strip())
        if not m:
            raise ValueError(f"an engines range lint/node_ok.py cannot read: {rng!r}")
        want = tuple(int(x or 0) for x in m.group(2, 3, 4))
        if have >= want and (m.group(1) == ">=" or have[0] == want[0]):
            return True
    return False


def needs():
    """{package: its engines.node range} of the packages lint/package.json names."""
    names = json.loads((HERE / "package.json").read_text())["devDependencies"]
    packages = json.loads((HERE / "package-lock.json").read_text())["packages"]
    return {n: packages[f"node_modules/{n}"]["engines"]["node"] for n in names
            if "node" in (packages[f"node_modules/{n}"].get("engines") or {})}


def main(version):
    have = tuple(int(x) for x in re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", version.strip()).groups())
    short = {n: r for n, r in needs().items() if not satisfies(have, r)}
    for n, r in short.items():
        print(f"Node {version.strip()} is not one {n} runs on (its engines: {r})", file=sys.stderr)
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
