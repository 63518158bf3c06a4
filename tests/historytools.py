"""Synthetic run series for the history tests (tests/test_history.py) and the detection-quality
tool's fixtures: copies of a recorded run manifest (tests/golden/report/results/) with their own
testid, start time, QPS/TPS/latency and, optionally, a TiDB variable switched from a given run on."""
import copy
import json
import random
from pathlib import Path

from tidbbench.history import cli as history

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests/golden/report/results/dev-tidb-oltp_point_select.json"
DAY_MS = 86_400_000


def run(capsys, *argv):
    """scripts/history in process: its exit status, stdout and stderr."""
    rc = history.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def ingest(capsys, results, *extra):
    return run(capsys, "ingest", "--results", str(results), "--no-prometheus", *extra)


def manifest(i, qps, base=None, start_ms=1_795_000_000_000, var=None, prefix="syn"):
    """Run i of a series: every step's QPS/TPS set to qps (x the step's share of the recorded
    QPS), its p95 and p99 scaled inversely, started a day after run i-1; var=(name, value) sets a
    global variable."""
    m = copy.deepcopy(base or json.loads(GOLDEN.read_text()))
    testid = f"{prefix}-{i:03d}"
    m["testid"] = m["options"]["testid"] = testid
    shift = start_ms + i * DAY_MS - m["run_start"]
    m["run_start"] += shift
    m["run_end"] += shift
    first = m["steps"][0]["qps"]
    for s in m["steps"]:
        ratio = qps / first
        s["qps"] = s["qps"] * ratio
        s["tps"] = s["tps"] * ratio
        for k in ("p95", "p99", "pct_value"):
            s["latency_ms"][k] = s["latency_ms"][k] / ratio
        for k in s["window"]:
            s["window"][k] += shift
    if var:
        m["target_variables"][var[0]] = var[1]
    return m


def write_series(folder, values, flip_at=None, var=("tidb_enable_prepared_plan_cache", "OFF"), prefix="syn"):
    """Writes one manifest per value into folder (a results folder); from run flip_at on, the
    variable var has its new value. Returns the testids."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    base = json.loads(GOLDEN.read_text())
    ids = []
    for i, v in enumerate(values):
        m = manifest(i, v, base, var=var if flip_at is not None and i >= flip_at else None, prefix=prefix)
        (folder / f"{m['testid']}.json").write_text(json.dumps(m))
        ids.append(m["testid"])
    return ids


def noise(n, mean=1000.0, cv=0.01, seed=1):
    rnd = random.Random(seed)
    return [rnd.gauss(mean, mean * cv) for _ in range(n)]


def step(n_before, n_after, change=-0.05, mean=1000.0, cv=0.01, seed=1):
    """A series with a level change of `change` (a fraction) after n_before runs."""
    v = noise(n_before + n_after, mean, cv, seed)
    return v[:n_before] + [x * (1 + change) for x in v[n_before:]]


# ---- TPC-C (k6/tpcc.js): copies of a recorded TPC-C run (tests/golden/tpcc/), as manifest() does for OLTP
TPCC_GOLDEN_DIR = ROOT / "tests/golden/tpcc"


def tpcc_golden():
    """The recorded TPC-C run manifest (one real run of k6/tpcc.js on the local TiDB)."""
    (f,) = sorted(TPCC_GOLDEN_DIR.glob("golden-*.json"))  # beside it: the report's fixtures (README.md)
    return json.loads(f.read_text())


def tpcc_manifest(i, tpmc, base, start_ms=1_795_000_000_000, latency=1.0, warehouses=None, prefix="tpcc"):
    """Run i of a TPC-C series: every step's throughput (tpmC, tpmTotal, transactions, each type's
    count and tpm) scaled so the first step's tpmC is `tpmc`, its latencies scaled inversely and
    New-Order's also by `latency`, started a day after run i-1; warehouses sets the option."""
    m = copy.deepcopy(base)
    testid = f"{prefix}-{i:03d}"
    m["testid"] = m["options"]["testid"] = testid
    shift = start_ms + i * DAY_MS - m["run_start"]
    m["run_start"] += shift
    m["run_end"] += shift
    ratio = tpmc / m["steps"][0]["tpmC"]
    for s in m["steps"]:
        for k in ("tpmC", "tpmTotal", "transactions"):
            s[k] = s[k] * ratio
        for name, x in s["txns"].items():
            x["count"], x["tpm"] = round(x["count"] * ratio), x["tpm"] * ratio
            f = (latency if name == "new_order" else 1.0) / ratio
            for k in ("avg", "p95", "p99", "max"):
                if isinstance(x["latency_ms"].get(k), (int, float)):
                    x["latency_ms"][k] = x["latency_ms"][k] * f
        for k in s["window"]:
            s["window"][k] += shift
    if warehouses is not None:
        m["options"]["warehouses"] = m["tpcc"]["warehouses"] = warehouses
    return m


def write_tpcc_series(folder, values, latency=None, **kw):
    """One TPC-C manifest per tpmC value into folder; latency: a New-Order latency factor per run."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    base = tpcc_golden()
    ids = []
    for i, v in enumerate(values):
        m = tpcc_manifest(i, v, base, latency=(latency[i] if latency else 1.0), **kw)
        (folder / f"{m['testid']}.json").write_text(json.dumps(m))
        ids.append(m["testid"])
    return ids
