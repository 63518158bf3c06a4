"""Dashboards as code for tidb-bench-stack.

Writes grafana/dashboards/<folder>/<name>.json from the definitions in this package. The generated JSON is
committed; tests/test_dashboards.py regenerates it and fails on any drift.

    python3 -m tidbbench.dash.generate            # (re)write grafana/dashboards/
    python3 -m tidbbench.dash.generate --out DIR  # write somewhere else (the drift test does this)

Only the Python standard library is used. Conventions:
  * every label matcher comes from SEL (the one selector config) so the dashboards agree;
  * panels get their shared defaults (datasource by uid, unit, legend, tooltip) from panel();
  * datasources are referenced by the provisioned uids `prometheus` and `loki`, never by
    ${DS_...} inputs;
  * every dashboard carries the run annotations (k6_oltp_marker, value = time in epoch ms).
"""
import argparse
import json
import sys
import os

from tidbbench import ROOT
from tidbbench.dash.databases import mysql, tidb
from tidbbench.dash.history import history
from tidbbench.dash.hosts import hosts, logs
from tidbbench.dash.run import benchmark_run, run_compare


# ---------------------------------------------------------------------------------------------
DASHBOARDS = {
    "benchmark/benchmark-run.json": benchmark_run,
    "benchmark/run-compare.json": run_compare,
    "databases/tidb.json": tidb,
    "databases/mysql.json": mysql,
    "hosts/hosts.json": hosts,
    "logs/logs.json": logs,
    "history/history.json": history,
}


def render(fn):
    return json.dumps(fn(), indent=2, ensure_ascii=False) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "grafana" / "dashboards"),
                    help="directory to write the dashboards' JSON into (default: grafana/dashboards)")
    args = ap.parse_args(argv)
    for rel, fn in DASHBOARDS.items():
        path = os.path.join(args.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(render(fn))
        print(path)
    return 0



if __name__ == "__main__":  # python3 -m tidbbench.dash.generate
    sys.exit(main())
