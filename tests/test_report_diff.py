"""tools/report-diff (issue #30's "a quickstart report before and after agree"): two small reports
of scripts/report's shape (tests/golden/report-diff/: one run's and another's, with their own
testids, times, database and figures) agree; a changed section, option, statement, testid format
or figure outside the tolerance is named; bad input exits 2 naming the value."""
import subprocess

import pytest

from conftest import ROOT
from tbstools import reportdiff

pytestmark = pytest.mark.fast

GOLD = ROOT / "tests/golden/report-diff"
ALIAS = ["--alias", "sbtest_a=sbtest_b"]


def run(tmp_path, a_text, b_text, *opts):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text(a_text)
    b.write_text(b_text)
    return reportdiff.main([*ALIAS, *opts, str(a), str(b)])


@pytest.fixture
def pair():
    return (GOLD / "a.md").read_text(), (GOLD / "b.md").read_text()


def test_two_runs_of_the_same_options_agree(tmp_path, capsys):
    assert reportdiff.main([*ALIAS, str(GOLD / "a.md"), str(GOLD / "b.md")]) == 0
    assert capsys.readouterr().out.startswith("agree:")
    # a report's folder (results/report-<id>/) is read as its report.md
    (tmp_path / "report-x").mkdir()
    (tmp_path / "report-x/report.md").write_text((GOLD / "b.md").read_text())
    assert reportdiff.main([*ALIAS, str(GOLD / "a.md"), str(tmp_path / "report-x")]) == 0


def test_the_database_names_differ_without_the_alias(capsys):
    assert reportdiff.main([str(GOLD / "a.md"), str(GOLD / "b.md")]) == 1
    out = capsys.readouterr().out
    assert "-    -e mysql_db=sbtest_a" in out and "+    -e mysql_db=sbtest_b" in out


def test_a_changed_section_is_named(tmp_path, pair, capsys):
    a, b = pair
    assert run(tmp_path, a, b.replace("### Point Select statements", "### Point Select digests")) == 1
    out = capsys.readouterr().out
    assert "sections: only in A: Test results > Point Select statements" in out
    assert "sections: only in B: Test results > Point Select digests" in out
    # the same sections in another order
    moved = b.replace("## Test commands", "## Tmp").replace("## Test parameters", "## Test commands").replace("## Tmp", "## Test parameters")
    assert run(tmp_path, a, moved) == 1
    assert "sections:" in capsys.readouterr().out


def test_a_changed_option_is_named(tmp_path, pair, capsys):
    a, b = pair
    assert run(tmp_path, a, b.replace("| Tables | 4 |", "| Tables | 5 |")) == 1
    assert "Test parameters: row 'Tables', Value: '4' vs '5' (must be identical)" in capsys.readouterr().out
    assert run(tmp_path, a, b.replace("    -e time=10 \\", "    -e time=11 \\")) == 1
    out = capsys.readouterr().out
    assert "Test commands: code block changed" in out and "+    -e time=11 \\" in out
    # an option only one side has
    assert run(tmp_path, a, b.replace("| Threads | 4,8 |", "| Threads | 4,8 |\n| rand_type | uniform |")) == 1
    assert "row labels differ: only in A -, only in B ['rand_type']" in capsys.readouterr().out


def test_statements_plan_digests_and_testids_must_be_identical(tmp_path, pair, capsys):
    a, b = pair
    assert run(tmp_path, a, b.replace("`321fba13ea`", "`321fba13eb`")) == 1
    assert "plan digest: '`321fba13ea`' vs '`321fba13eb`' (must be identical)" in capsys.readouterr().out
    assert run(tmp_path, a, b.replace("from sbtest3 where", "from sbtest3 where k =")) == 1
    assert "row labels differ" in capsys.readouterr().out
    assert run(tmp_path, a, b.replace("testid 20261126-104251-571a |", "testid 2026-11-26-571a |")) == 1
    assert "row 'Run', Value: 'testid <testid>' vs 'testid 2026-11-26-571a' (must be identical)" in capsys.readouterr().out


def test_figures_within_and_outside_the_tolerance(tmp_path, pair, capsys):
    a, b = pair
    # the widest gap of the pair: 8 threads' 95% latency, 4.10 (A) vs 3.30 (B), 19.5% of 4.10
    assert run(tmp_path, a, b, "--tolerance", "0.2") == 0
    capsys.readouterr()
    assert run(tmp_path, a, b, "--tolerance", "0.19") == 1
    out = capsys.readouterr().out
    assert out.startswith("1 difference(s)")
    assert "Point Select performance: row '8', 95% latency (ms): 4.10 vs 3.30: outside the tolerance (-19.5%; allowed 19% or 0.05)" in out
    assert run(tmp_path, a, b, "--tolerance", "0.05") == 1
    assert "row '4', QPS: 9248.69 vs 8723.23: outside the tolerance (-5.7%; allowed 5% or 0.05)" in capsys.readouterr().out
    # a figure wrong by a factor, against the default (50%)
    assert run(tmp_path, a, b.replace("| 8 | 8998.89 | 8998.89 | 3.30 |", "| 8 | 899.89 | 8998.89 | 3.30 |")) == 1
    assert "row '8', QPS: 9206.75 vs 899.89: outside the tolerance" in capsys.readouterr().out
    # a column of its own tolerance: 95% latency's 4.10 vs 3.30 agrees at 20%, the rest at 6%
    assert run(tmp_path, a, b, "--tolerance", "0.06", "--column-tolerance", "95% latency (ms)=0.2") == 0
    assert run(tmp_path, a, b, "--tolerance", "0.06", "--column-tolerance", "95% latency (ms)=0.19") == 1
    capsys.readouterr()
    # a figure become a word (a unit, a "window too short") must be identical
    assert run(tmp_path, a, b.replace("| 4 | 8723.23 | 8723.23 | 1.61 |", "| 4 | 8723.23 | 8723.23 | n/a |")) == 1
    assert "row '4', 95% latency (ms): '1.52' vs 'n/a' (must be identical)" in capsys.readouterr().out
    # near 0 the absolute tolerance: 0.43 vs 0.45 within 50% anyway; the cross-check's +0.00% vs +0.04%
    assert run(tmp_path, a, b.replace("| 8998.89 | +0.00% |", "| 8998.89 | +0.04% |")) == 0


def test_bad_input_exits_2_naming_it(tmp_path, capsys):
    good = str(GOLD / "a.md")
    assert reportdiff.main([good, str(tmp_path / "nope.md")]) == 2
    assert "nope.md: no such report" in capsys.readouterr().err
    (tmp_path / "x.md").write_text("just some text\n")
    assert reportdiff.main([good, str(tmp_path / "x.md")]) == 2
    assert "x.md: not a report of scripts/report" in capsys.readouterr().err
    assert reportdiff.main(["--tolerance", "lots", good, good]) == 2
    assert "--tolerance lots" in capsys.readouterr().err
    assert reportdiff.main(["--column-tolerance", "max=2", good, good]) == 2
    assert "--column-tolerance max=2: COLUMN=REL" in capsys.readouterr().err
    assert reportdiff.main(["--alias", "sbtest_a", good, good]) == 2
    assert "--alias sbtest_a: OLD=NEW" in capsys.readouterr().err


def test_the_tool_runs_as_documented():
    """tools/report-diff (bash, in the venv) as docs/report.md gives it: exit 0 and 'agree:' for two
    reports that agree, 1 with the differences listed for two that do not, 2 naming bad input."""
    def tool(*args):
        return subprocess.run([str(ROOT / "tools/report-diff"), *args], capture_output=True, text=True, timeout=60)
    a, b = str(GOLD / "a.md"), str(GOLD / "b.md")
    p = tool(*ALIAS, a, b)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith(f"agree: {a} and {b} (same sections, tables, rows and fixed values; figures within 50%"), \
        p.stdout
    p = tool(a, b)  # without the alias, each side's own database differs
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.startswith(f"2 difference(s) between A={a} and B={b}:"), p.stdout
    assert "-    -e mysql_db=sbtest_a \\" in p.stdout and "+    -e mysql_db=sbtest_b \\" in p.stdout, p.stdout
    p = tool(a, str(GOLD / "nope.md"))
    assert p.returncode == 2 and "nope.md: no such report" in p.stderr, (p.returncode, p.stderr)
