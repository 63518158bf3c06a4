"""tidb-bench-stack's Python, one package (docs/ARCHITECTURE.md, "The Python package"):
  tidbbench            what every part shares: ROOT, ReportError, contract (k6/contract.json,
                       contract/promql.json), commands, k6env, sbhist (sysbench's histogram),
                       selectors (the label selectors), merge (`scripts/k6 merge`)
  tidbbench.report     the report (scripts/report, tbs-report)
  tidbbench.sweep      sweeps and plans (scripts/sweep, tbs-sweep)
  tidbbench.dash       the dashboards as code and PingCAP's dashboards (standard library only:
                       compose runs tidbbench.dash.pingcap in a plain Python image)
  tidbbench.gen        the generators: runtime files, the option table of docs/options.md
Imports are absolute (`from tidbbench.report import stats`). The package imports neither tools/
nor tests/ and has no import cycle (tests/test_layout.py). This file, and every module that
compose or `scripts/stack` runs before the venv exists (merge, sbhist, contract, selectors, gen,
dash), needs only the standard library."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class ReportError(Exception):
    """A problem with the user's input or the data: printed as `error: ...`, exit code `code`."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code
