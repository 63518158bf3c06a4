#!/usr/bin/env python3
"""Re-records the TPC-C report's fixture (tests/golden/tpcc/) from real k6/tpcc.js runs that are
still in the local Prometheus (tests/test_tpcc_report.py reads it). On the local stack:

  db=sbtest_tpcc_golden res=$PWD/.stack/tpcc-golden
  scripts/k6 run -e mysql_db=$db -e tpcc_command=prepare -e warehouses=1 -e threads=2 k6/tpcc.js
  for t in tpcc-golden-a tpcc-golden-b; do
    scripts/k6 run -e mysql_db=$db -e warehouses=1 -e threads=1,2 -e time=5 -e testid=$t -e results_dir=$res k6/tpcc.js
  done
  scripts/sweep --plan plans/tpcc-pingcap.json --arm-target all=127.0.0.1:4000 --mysql-db sbtest_tpcc_gplan \\
      --scale 0.0002 --threads 1,2 --time 5 --repeats 2 --drop-global tidb_enable_async_commit,tidb_enable_1pc \\
      --id tpccg --results $res --no-report
  .stack/venv/bin/python tests/golden/record_tpcc.py $res tpccg

It copies the runs' manifests (target variables cut to the ones the report shows, results_dir
made relative), the plan's and its arms' sweep manifests, and records every Prometheus answer the
three reports (one run, A vs B, the plan) ask for into prometheus.json.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tidbbench import ROOT
from tidbbench.report.report import COMMON_VARS, MYSQL_VARS, TIDB_VARS

FIX = Path(__file__).resolve().parent / "tpcc"
KEEP = set(TIDB_VARS + MYSQL_VARS + COMMON_VARS + ["tx_isolation", "tidb_enable_async_commit", "tidb_enable_1pc"])
RUNS = ("tpcc-golden-a", "tpcc-golden-b")


def copy_run(src, res, testid):
    m = json.loads((src / f"{testid}.json").read_text())
    m["target_variables"] = {k: v for k, v in m["target_variables"].items() if k in KEEP}
    m["options"]["results_dir"] = "results"
    (res / f"{testid}.json").write_text(json.dumps(m, indent=2) + "\n")


def main(src, plan_id):
    src = Path(src)
    res = FIX / "results"
    res.mkdir(parents=True, exist_ok=True)
    for old in res.glob("*.json"):
        old.unlink()
    for t in RUNS:
        copy_run(src, res, t)
    plan = json.loads((src / f"plan-{plan_id}.json").read_text())
    (res / f"plan-{plan_id}.json").write_text(json.dumps(plan, indent=2) + "\n")
    for sweep_id in plan["arms"].values():
        sweep = json.loads((src / f"{sweep_id}.json").read_text())
        (res / f"{sweep_id}.json").write_text(json.dumps(sweep, indent=2) + "\n")
        for r in sweep["runs"]:
            copy_run(src, res, r["testid"])
    rec = Path(tempfile.mkstemp(suffix=".jsonl")[1])
    env = dict(os.environ, TBS_PROM_RECORD=str(rec))
    with tempfile.TemporaryDirectory() as tmp:
        for i, args in enumerate(([RUNS[0]], list(RUNS), [f"plan-{plan_id}"])):
            subprocess.run([str(ROOT / "scripts/report"), "--results", str(res), "--out", f"{tmp}/r{i}", *args],
                           env=env, check=True)
    answers = {}
    for line in rec.read_text().splitlines():
        e = json.loads(line)
        answers[e["path"] + "?" + json.dumps(e["params"], sort_keys=True)] = {
            "path": e["path"], "params": e["params"], "response": e["response"]}
    rec.unlink()
    (FIX / "prometheus.json").write_text(json.dumps(list(answers.values()), indent=1) + "\n")
    print(f"recorded {len(answers)} answers into {FIX / 'prometheus.json'}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
