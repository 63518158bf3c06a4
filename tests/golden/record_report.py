#!/usr/bin/env python3
"""Re-records the golden test's fixture (tests/golden/report/) from two real sweeps that are
still in the local Prometheus, e.g. after the report's queries changed:

  scripts/sweep --workloads oltp_point_select,oltp_read_write --threads 2,4 --time 8 \\
      --warmup-time 2 --tables 2 --table-size 5000 --mysql-db sbtest_report_dev --reset --id dev-tidb
  scripts/sweep ... -e mysql_port=3306 --id dev-maria
  .stack/venv/bin/python tests/golden/record_report.py sweep-dev-tidb sweep-dev-maria
  TBS_GOLDEN_UPDATE=1 .stack/venv/bin/python -m pytest -q tests/test_report.py -k golden

It copies the sweeps' manifests (target variables cut to the ones the report shows), changes
one step's k6 figures so the cross-check has something to warn about (see README.md), and
records every Prometheus answer the report asks for into prometheus.json.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tidbbench import ROOT
from tidbbench.report.report import COMMON_VARS, MYSQL_VARS, TIDB_VARS

FIX = Path(__file__).resolve().parent / "report"
KEEP = set(TIDB_VARS + MYSQL_VARS + COMMON_VARS + ["tx_isolation"])


def main(base, cand):
    src = ROOT / "results"
    res = FIX / "results"
    res.mkdir(parents=True, exist_ok=True)
    for old in res.glob("*.json"):
        old.unlink()
    for sid in (base, cand):
        sweep = json.loads((src / f"{sid}.json").read_text())
        (res / f"{sid}.json").write_text(json.dumps(sweep, indent=2) + "\n")
        for r in sweep["runs"]:
            m = json.loads((src / f"{r['testid']}.json").read_text())
            m["target_variables"] = {k: v for k, v in m["target_variables"].items() if k in KEEP}
            m["options"]["results_dir"] = "results"
            (res / f"{r['testid']}.json").write_text(json.dumps(m, indent=2) + "\n")
    # the candidate's last run, last step: k6's summary made to disagree with Prometheus
    last = json.loads((src / f"{cand}.json").read_text())["runs"][-1]["testid"]
    m = json.loads((res / f"{last}.json").read_text())
    s = m["steps"][-1]
    s["qps"] = round(s["qps"] * 1.03, 2)
    s["latency_ms"]["p95"] = s["latency_ms"]["p95"] * 1.25
    (res / f"{last}.json").write_text(json.dumps(m, indent=2) + "\n")

    rec = Path(tempfile.mkstemp(suffix=".jsonl")[1])
    env = dict(os.environ, TBS_PROM_RECORD=str(rec))
    with tempfile.TemporaryDirectory() as tmp:
        first = json.loads((src / f"{base}.json").read_text())["runs"][0]["testid"]
        for args in ([base, cand], [first]):
            subprocess.run([str(ROOT / "scripts/report"), "--results", str(res),
                            "--out", f"{tmp}/r", *args], env=env, check=True)
    answers = {}
    for line in rec.read_text().splitlines():
        e = json.loads(line)
        key = e["path"] + "?" + json.dumps(e["params"], sort_keys=True)
        answers[key] = {"path": e["path"], "params": e["params"], "response": e["response"]}
    rec.unlink()
    (FIX / "prometheus.json").write_text(json.dumps(list(answers.values()), indent=1) + "\n")
    print(f"recorded {len(answers)} answers into {FIX / 'prometheus.json'}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
