"""tools/aa-rate (issue #28), the parts that need no server: the derived plan (only the two
identical arms, pairs x the plan's repeats rounds, its own database, prepared once), bad arms
refused, and the pairs cut from the arms' sweeps round by round. The measurement itself runs on
the local stack by hand (docs/report.md gives the command and the figure)."""
import json

import pytest

from conftest import ROOT
from tidbbench import ReportError
from tbstools import aarate

pytestmark = pytest.mark.fast


def args(**kw):
    a = aarate.args_of([])
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def test_the_derived_plan_runs_the_identical_arms_pairs_times():
    p, names = aarate.derived_plan(args(pairs=20))
    assert names == ["a", "a2"] and [arm["name"] for arm in p["arms"]] == ["a", "a2"]
    base = json.loads((ROOT / "plans/local-aab.json").read_text())
    assert p["per_pair"] == base["repeats"] == 5 and p["repeats"] == 100
    assert p["options"]["mysql_db"] == "sbtest_stats_aa" and p["options"]["time"] == 1 and p["prepare"] is True
    assert p["workloads"] == ["oltp_point_select"] and p["threads"] == [1, 2] and p["seed"] == base["seed"]
    with pytest.raises(ReportError, match=r"--arms a,idxcost: the arms differ"):
        aarate.derived_plan(args(arms="a,idxcost"))
    with pytest.raises(ReportError, match=r"--arms a,b: two of the plan's arms \(valid: a, a2, idxcost\)"):
        aarate.derived_plan(args(arms="a,b"))


def test_the_sweep_it_starts_is_a_command_that_runs(tmp_path):
    """The command aa-rate hands to subprocess starts scripts/sweep for real: its --help exits 0
    and names the plan option (scripts/sweep became bash with the package layout; run under the
    Python interpreter, as aa-rate did until 2026-12-02, it was a SyntaxError and no pair ran)."""
    import subprocess
    cmd = aarate.sweep_command(tmp_path / "plan.json", "aa-test", tmp_path)
    assert cmd[0] == str(ROOT / "scripts/sweep") and cmd[1:3] == ["--plan", str(tmp_path / "plan.json")]
    p = subprocess.run([cmd[0], "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-800:]
    assert "--plan" in p.stdout


def test_pairs_are_cut_round_by_round(tmp_path):
    for n in ("a", "a2"):
        runs = [{"workload": "oltp_point_select", "testid": f"x-{n}-r{r}", "repeat": r, "arm": n} for r in range(1, 13)]
        (tmp_path / f"sweep-x-{n}.json").write_text(json.dumps({"sweep": f"sweep-x-{n}", "runs": runs}))
    pairs = aarate.pair_sweeps(tmp_path, "x", ["a", "a2"], 5, 3)
    assert pairs == [("sweep-x-a-p01", "sweep-x-a2-p01"), ("sweep-x-a-p02", "sweep-x-a2-p02")]  # 11-12: no pair
    m = json.loads((tmp_path / "sweep-x-a2-p02.json").read_text())
    assert [r["repeat"] for r in m["runs"]] == [6, 7, 8, 9, 10] and m["sweep"] == "sweep-x-a2-p02"
