"""tidb-bench-stack reports: seed-style reports (one run, or baseline vs candidate) from the
run manifests under results/ and the Prometheus series of docs/CONTRACT.md, and sweeps
(several workloads x thread steps in one command). Entry points: scripts/report, scripts/sweep."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


class ReportError(Exception):
    """A problem with the user's input or the data: printed as `error: ...`, exit code `code`."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code
