"""k6/lib/progress.js: the --report-interval lines come from the run's tally in the k6 process
(k6/x/tbs), in sysbench's format: rates per second over the interval, the interval's own
latency percentile (0.00 when no event ended in it), and no line before its interval ends.
Needs bin/k6 only (tests/k6/progress_lines.js fills the tally itself)."""
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.full

ROOT = Path(__file__).resolve().parent.parent


def test_progress_lines_from_the_tally():
    env = dict(os.environ, K6_LOG_FORMAT="raw", K6_OUT="")
    p = subprocess.run([str(ROOT / "bin/k6"), "run", "--quiet", "--summary-mode=disabled", "--no-usage-report",
                        str(ROOT / "tests/k6/progress_lines.js")], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    out = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith(("LINE ", "NULL"))]
    assert out == [
        # 12 ms is sysbench's bucket 522, reported as its value, 12.08 ms
        "LINE [ 5s ] thds: 8 tps: 1.00 qps: 26.00 (r/w/o: 20.00/4.00/2.00) lat (ms,95%): 12.08 err/s: 0.20 reconn/s: 0.40",
        "LINE [ 10s ] thds: 8 tps: 1.00 qps: 10.00 (r/w/o: 10.00/0.00/0.00) lat (ms,95%): 0.00 err/s: 0.00 reconn/s: 0.00",
        "NULL",
    ], p.stdout + p.stderr
