"""Issue #23 step 4, the statements behind the figures: k6/lib/statements.js records per thread step
the target's statement digests of the run's database (the difference of two snapshots of TiDB's
statements summary or performance_schema's digest table), tidbbench/report/statements.py shows them per
workload and lists, for A vs B, the statements whose plan or average latency changed.

- the snapshot arithmetic (k6/lib/statements.js, run by bin/k6 on made-up snapshots): differences,
  a TiDB summary window that rolls over between the snapshots, a counter that goes down (partial,
  never negative), rows gone, top N, figures kept only when they are the step's own, unavailable;
- the A vs B rule (tidbbench/report/statements.py) on made-up manifests: plan, latency with one sample
  and with repeats (Mann-Whitney U, Holm), statements one side only ran, a side without them;
- on the local stack (about 35 s): select_random_points on TiDB with the secondary index, then
  without it (a real plan change: IndexLookUp -> a full scan), each step's digest counting exactly
  the statements k6 counted, and the A vs B report naming the statement's plan change right after
  "What differs"; on MariaDB (performance_schema is OFF there) the manifest says why there are none."""
import json
import os
import subprocess

import pytest

from conftest import ROOT, fresh_db, k6, run_testid, sql, summary, tidb_root

from tidbbench.report import manifest, statements

# serial (conftest.py): it turns TiDB's statement summary off, which every other run reads
pytestmark = [pytest.mark.fast, pytest.mark.serial]

# -- the snapshot arithmetic of k6/lib/statements.js

JS = """
import { diffSnapshots, stepStatements, snapshotTimes } from '%s';
export const options = { vus: 1, iterations: 1 };
const cases = JSON.parse(open('%s'));
export default function () {
  const out = {};
  for (const [name, c] of Object.entries(cases)) {
    if (c.fn === 'diff') out[name] = diffSnapshots(c.a, c.b, c.top);
    else if (c.fn === 'times') out[name] = snapshotTimes(c.o, c.w);
    else {
      const notes = {};
      for (const [phase, snap] of Object.entries(c.snaps)) notes[`statements/${c.testid}/t${c.threads}/${phase}`] = JSON.stringify(snap);
      notes['other/note'] = 'x';
      out[name] = stepStatements(notes, c.testid, c.threads, 10) || null;
    }
  }
  console.log(`RESULT ${JSON.stringify(out)}`);
}
"""


def row(digest, n, ms, *, inst="i1", win="w1", plan="p1", mx=1.0, hits=0, err=0, rows=0, p95=None, text=None):
    """A snapshot row as k6/lib/statements.js keeps it."""
    return [inst, win, digest, plan, n, ms, mx, hits, err, rows, p95, text or f"select {digest} from t where id = ?"]


def run_js(tmp_path, cases):
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    script = tmp_path / "statements_cases.js"
    script.write_text(JS % ((ROOT / "k6/lib/statements.js").as_uri(), tmp_path / "cases.json"))
    env = dict(os.environ, K6_LOG_FORMAT="raw", K6_OUT="")
    p = subprocess.run([str(ROOT / "bin/k6"), "run", "--quiet", "--summary-mode=disabled", "--no-usage-report",
                        str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    line = next(ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def test_snapshot_differences(tmp_path):
    src = "information_schema.cluster_statements_summary_history"
    a = {"at": 1000, "source": src, "rows": [
        row("d1", 100, 50.0, hits=90, rows=1000), row("d2", 10, 40.0),
        row("d1", 7, 7.0, inst="i2"),  # the same digest on another TiDB
        row("d3", 5, 1.0),  # did not run in the step
        row("d4", 100, 100.0, win="w0"),  # an older window (history): unchanged
    ]}
    b = {"at": 4000, "source": src, "rows": [
        row("d1", 160, 80.0, hits=150, rows=1600), row("d2", 12, 140.0),
        row("d1", 17, 12.0, inst="i2"),
        row("d3", 5, 1.0),
        row("d4", 100, 100.0, win="w0"),
        row("d5", 4, 2.0, mx=0.9, p95=0.8),  # first seen in the step
        row("d2", 3, 6.0, win="w2"),  # d2 again in the window that began between the snapshots
        row("d1", 2, 1.0, plan="p2"),  # d1 with another plan
    ]}
    times = {"o": {"warmup_time": 0}, "w": {"connect": 10000, "start": 11000, "measure_start": 11000,
                                            "measure_end": 13000, "end": 14000}}
    r = run_js(tmp_path, {
        "plain": {"fn": "diff", "a": a, "b": b, "top": 10},
        "top2": {"fn": "diff", "a": a, "b": b, "top": 2},
        "times": {"fn": "times", **times},
        "times_warm": {"fn": "times", "o": {"warmup_time": 5}, "w": times["w"]},
    })
    s = r["plain"]
    assert s["available"] is True and s["source"] == src and s["at"] == [1000, 4000] and "partial" not in s
    top = {(x["digest"], x["plan_digest"]): x for x in s["top"]}
    assert set(top) == {("d1", "p1"), ("d2", "p1"), ("d5", "p1"), ("d1", "p2")}  # d3, d4 did not run
    d1 = top[("d1", "p1")]  # both TiDB instances: 60 + 10 executions, 30 + 5 ms
    assert d1["executions"] == 70 and d1["total_ms"] == pytest.approx(35.0) and d1["avg_ms"] == pytest.approx(0.5)
    assert d1["plan_cache_hits"] == 60 and d1["rows_examined"] == 600
    assert d1["max_ms"] is None and d1["p95_ms"] is None  # cumulative on the server: not the step's own
    d2 = top[("d2", "p1")]  # 2 in the old window, 3 in the new one
    assert d2["executions"] == 5 and d2["total_ms"] == pytest.approx(106.0)
    d5 = top[("d5", "p1")]  # first seen in the step: its max and p95 are the step's
    assert d5["executions"] == 4 and d5["max_ms"] == 0.9 and d5["p95_ms"] == 0.8
    assert [x["digest"] for x in s["top"]] == ["d2", "d1", "d5", "d1"]  # by total latency
    assert s["digests"] == 4 and s["executions"] == 70 + 5 + 4 + 2
    assert s["total_ms"] == pytest.approx(35 + 106 + 2 + 1)
    assert len(r["top2"]["top"]) == 2 and r["top2"]["digests"] == 4 and r["top2"]["top_n"] == 2
    # no warm-up: the start snapshot just before the load, the end one after the graceful tail
    assert r["times"] == [10750, 13750] and r["times_warm"] == [11000, 13750]


def test_a_reset_summary_makes_the_step_partial_never_negative(tmp_path):
    src = "performance_schema.events_statements_summary_by_digest"
    a = {"at": 1, "source": src, "rows": [row("d1", 100, 50.0, plan=""), row("d2", 10, 5.0, plan=""),
                                          row("d3", 10, 5.0, plan="")]}
    b = {"at": 2, "source": src, "rows": [
        row("d1", 30, 20.0, plan=""),  # went down: the table was truncated (same FIRST_SEEN)
        row("d2", 25, 10.0, plan=""),  # fine
        row("d3", 4, 2.0, plan="", win="w9"),  # d3's row was reset: a new FIRST_SEEN, the old one gone
    ]}
    s = run_js(tmp_path, {"reset": {"fn": "diff", "a": a, "b": b, "top": 10}})["reset"]
    assert "went down" in s["partial"] and "gone" in s["partial"]
    by = {x["digest"]: x for x in s["top"]}
    assert set(by) == {"d2", "d3"} and by["d2"]["executions"] == 15 and by["d3"]["executions"] == 4
    assert all(x["executions"] > 0 and x["total_ms"] >= 0 for x in s["top"])
    assert by["d2"]["plan_digest"] is None and by["d2"]["plan_cache_hits"] is None  # MySQL has neither


def test_step_statements_from_notes(tmp_path):
    ok = {"at": 1, "source": "x", "rows": [row("d1", 1, 1.0)]}
    ok2 = {"at": 2, "source": "x", "rows": [row("d1", 3, 2.0)]}
    r = run_js(tmp_path, {
        "both": {"fn": "notes", "testid": "t-1", "threads": 4, "snaps": {"start": ok, "end": ok2}},
        "other_step": {"fn": "notes", "testid": "t-1", "threads": 8, "snaps": {}},
        "no_end": {"fn": "notes", "testid": "t-1", "threads": 4, "snaps": {"start": ok}},
        "off": {"fn": "notes", "testid": "t-1", "threads": 4,
                "snaps": {"start": {"at": 1, "unavailable": "performance_schema is OFF"}, "end": ok2}},
        "error": {"fn": "notes", "testid": "t-1", "threads": 4,
                  "snaps": {"start": ok, "end": {"at": 2, "error": "Error 1105: boom"}}},
    })
    assert r["both"]["available"] and r["both"]["top"][0]["executions"] == 2
    assert r["other_step"] is None  # nothing read: the manifest has no statements field
    assert r["no_end"] == {"available": False, "why": "the run ended before the step's second snapshot"}
    assert r["off"] == {"available": False, "why": "performance_schema is OFF"}
    assert r["error"]["available"] is False and "at the step's end: Error 1105: boom" in r["error"]["why"]


# -- the A vs B rule of tidbbench/report/statements.py


def stmt(text, avg, n=1000, plan="p1"):
    return {"digest": text, "plan_digest": plan, "text": text, "executions": n, "total_ms": avg * n, "avg_ms": avg}


def run_of(testid, steps, product="tidb"):
    """A Run whose steps carry statements: steps = {threads: [stmt...] | {"why": ...}}."""
    out = []
    for t, st in steps.items():
        if isinstance(st, dict):
            s = {"available": False, **st}
        else:
            s = {"available": True, "source": "information_schema.cluster_statements_summary_history",
                 "digests": len(st), "executions": sum(x["executions"] for x in st),
                 "total_ms": sum(x["total_ms"] for x in st), "top": st}
        out.append({"threads": t, "elapsed_s": 2.0, "seconds": 2, "statements": s})
    m = {"testid": testid, "workload": "oltp_read_only", "product": product, "steps": out,
         "target": {"db": "sbtest"}}
    return manifest.Run(testid=testid, manifest=m, path=None)


def runset(name, runs):
    return manifest.RunSet(id=name, kind="sweep" if len(runs) > 1 else "run", runs=runs)


SEL = "SELECT `c` FROM `sbtest1` WHERE `id` = ?"
RANGE = "select c from sbtest1 where id between ? and ?"


def test_the_rule_with_one_sample_a_side():
    a = runset("a", [run_of("a1", {2: [stmt(SEL, 0.10), stmt(RANGE, 1.0)], 4: [stmt(SEL, 0.20), stmt(RANGE, 1.0)]})])
    b = runset("b", [run_of("b1", {2: [stmt("select `c` from `sbtest1` where `id`=?", 0.115),  # +15%: below 20%
                                       stmt(RANGE, 1.0, plan="p9")],  # another plan, same latency
                                   4: [stmt(SEL, 0.30), stmt(RANGE, 1.0),  # +50%
                                       stmt("select sleep(?)", 5.0, n=100)]})])  # only B: 1/3 of its time
    changed, notes, compared = statements.changes([a, b], ["oltp_read_only"])
    assert notes == [] and compared == 2
    got = [(r["threads"], statements.norm(r["text"]), r["why"]) for r in changed]
    assert got == [
        (2, statements.norm(RANGE), ["plan"]),  # plan changes first
        (4, statements.norm(SEL), ["avg latency (n=1)"]),
        (4, "selectsleep(?)", ["only in B"]),
    ]
    assert changed[1]["cmp"].change == pytest.approx(50.0) and changed[1]["cmp"].reason == "n=1: no significance"
    md = "\n".join(statements.section([a, b], ["A", "B"], ["oltp_read_only"]))
    assert "## Statements that changed" in md
    assert "| Read Only | 2 | `select c from sbtest1 where id between ? and ?` | plan | 1.000 | 1.000 | +0.0% " \
           "| n=1: no significance | `p1` | `p9` | 500.0 | 500.0 |" in md
    assert "| Read Only | 4 | `select sleep(?)` | only in B | — | 5.000 | — |  | — | `p1` | — | 50.0 |" in md


def test_the_rule_with_repeats_uses_the_medians_and_significance():
    def side(name, avgs_sel, avgs_range, plan="p1"):
        return runset(name, [run_of(f"{name}{i}", {8: [stmt(SEL, x), stmt(RANGE, y, plan=plan)]})
                             for i, (x, y) in enumerate(zip(avgs_sel, avgs_range))])
    a = side("a", [0.100, 0.101, 0.099, 0.102, 0.100], [1.00, 1.01, 0.99, 1.02, 1.00])
    # SEL +30% in every sample (significant); RANGE +2% (significant too, but below MIN_CHANGE)
    b = side("b", [0.130, 0.131, 0.129, 0.132, 0.130], [1.021, 1.032, 1.025, 1.041, 1.023])
    changed, _, _ = statements.changes([a, b], ["oltp_read_only"])
    assert [(statements.norm(r["text"]), r["why"]) for r in changed] == [(statements.norm(SEL), ["avg latency"])]
    c = changed[0]["cmp"]
    assert c.significant and c.p_adj < 0.05 and c.change == pytest.approx(30.0, abs=0.5)
    # the same five samples a side, but overlapping: ~, nothing listed
    b2 = side("b", [0.099, 0.104, 0.098, 0.101, 0.100], [1.0, 1.0, 1.0, 1.0, 1.0])
    assert statements.changes([a, b2], ["oltp_read_only"])[0] == []
    md = "\n".join(statements.section([a, b2], ["A", "B"], ["oltp_read_only"]))
    assert "No statement's plan or average latency changed by this rule." in md


def test_a_side_without_statements_and_old_manifests():
    a = runset("a", [run_of("a1", {2: [stmt(SEL, 0.1)]})])
    off = runset("b", [run_of("b1", {2: {"why": "performance_schema is OFF"}}, product="mariadb")])
    changed, notes, compared = statements.changes([a, off], ["oltp_read_only"])
    assert changed == [] and compared == 0 and notes == [("oltp_read_only", 2, 1, "performance_schema is OFF")]
    md = "\n".join(statements.section([a, off], ["TiDB", "MariaDB"], ["oltp_read_only"]))
    assert "not compared, MariaDB has no statements: performance_schema is OFF" in md and "No statements to compare." in md
    lines = "\n".join(statements.workload_lines([off], ["MariaDB"], "oltp_read_only", False))
    assert lines.startswith("### Read Only statements") and "testid b1: no statements: performance_schema is OFF." in lines
    # runs recorded before statements were (no field at all): the report is unchanged
    old = run_of("o1", {2: []})
    del old.manifest["steps"][0]["statements"]
    assert statements.section([runset("o", [old]), runset("p", [old])], ["A", "B"], ["oltp_read_only"]) == []
    assert statements.workload_lines([runset("o", [old])], ["A"], "oltp_read_only", False) == []


def test_a_plan_made_without_statistics_is_named():
    """TiDB's plan text says when it was made without the table's statistics (the first step
    after an ANALYZE or a restart, before TiDB loaded them): the workload's statements say so."""
    scan = dict(stmt(RANGE, 20.0, plan="p9"), plan="TableFullScan_5 cop[tikv] table:sbtest1, stats:partial[id:allEvicted]")
    lookup = dict(stmt(RANGE, 0.5), plan="IndexLookUp_10 root ... IndexRangeScan_8 table:sbtest1, index:k_1(k)")
    run = runset("a", [run_of("a1", {1: [scan], 2: [lookup]})])
    md = "\n".join(statements.workload_lines([run], ["A"], "oltp_read_only", False))
    assert ("**Statistics not loaded:** `select c from sbtest1 where id between ? and ?` ran at 1 thread with a plan "
            "TiDB made without the table's statistics (`stats:partial[id:allEvicted]` in its plan)") in md, md
    pseudo = dict(lookup, plan="TableReader ... stats:pseudo")
    md = "\n".join(statements.workload_lines([runset("b", [run_of("b1", {2: [pseudo], 4: [pseudo]})])], ["B"],
                                              "oltp_read_only", False))
    assert "ran at 2, 4 threads with a plan TiDB made without the table's statistics (`stats:pseudo`" in md, md
    ok = runset("c", [run_of("c1", {2: [lookup]})])
    assert "Statistics not loaded" not in "\n".join(statements.workload_lines([ok], ["C"], "oltp_read_only", False))


# -- on the local stack


def k6_run(*args):
    p = k6("run", *args, "oltp.js")
    return summary(run_testid(p.stdout + p.stderr))


def statement_steps(m):
    return {s["threads"]: s for s in m["steps"]}


@pytest.fixture(scope="module")
def tidb_ab(stack):
    """select_random_points on TiDB with its secondary index (A), then without it (B)."""
    db = fresh_db("tidb", "sbtest_stmts")
    common = ["-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=1000"]
    k6("run", *common, "prepare.js")
    run = common + ["-e", "workload=select_random_points", "-e", "threads=2", "-e", "time=2"]
    a = k6_run(*run)
    sql("tidb", "ALTER TABLE sbtest1 DROP INDEX k_1", db)
    b = k6_run(*run)
    yield a, b
    sql("tidb", f"DROP DATABASE {db}")


@pytest.mark.full
def test_tidb_step_statements_count_what_k6_counted(tidb_ab):
    for m in tidb_ab:
        (step,) = m["steps"]
        st = step["statements"]
        assert st["available"] and st["source"] == "information_schema.cluster_statements_summary_history", st
        assert "partial" not in st, st
        (x,) = [x for x in st["top"] if x["text"].startswith("select `id` , `k` , `c` , `pad` from `sbtest1` where `k` in")]
        # every execution k6 counted (each is one read), none of another step or run: the start snapshot
        # comes before the load, the end one after the graceful tail
        assert x["executions"] == step["queries"]["read"] == step["queries"]["total"], (x, step["queries"])
        assert x["avg_ms"] == pytest.approx(x["total_ms"] / x["executions"]) and x["avg_ms"] > 0
        assert x["plan_digest"] and len(x["plan_digest"]) == 64
        # the reader's own statements are not the run's: nothing of information_schema is listed
        assert not any("statements_summary" in y["text"] for y in st["top"]), st["top"]
        assert sum(y["executions"] for y in st["top"]) <= st["executions"]
    (xa,), (xb,) = [[x for x in m["steps"][0]["statements"]["top"] if " in (" in x["text"]] for m in tidb_ab]
    # dropping the index changed the plan: an index range scan before, a full scan after (TiDB's own plan text)
    assert xa["plan_digest"] != xb["plan_digest"]
    assert "IndexRangeScan" in xa["plan"] and "index:k_1(k)" in xa["plan"] and "TableFullScan" not in xa["plan"]
    assert "TableFullScan" in xb["plan"] and "k_1" not in xb["plan"]


@pytest.mark.full
def test_tidb_a_vs_b_report_names_the_plan_change(tidb_ab, tmp_path):
    a, b = tidb_ab
    out = tmp_path / "ab"
    p = subprocess.run([str(ROOT / "scripts/report"), "--out", str(out), a["testid"], b["testid"]],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    md = (out / "report.md").read_text()
    # right after What differs, before any figure
    assert md.index("## What differs") < md.index("## Statements that changed") < md.index("## Test purpose")
    sec = md[md.index("## Statements that changed"):md.index("## Test purpose")]
    (line,) = [ln for ln in sec.splitlines() if ln.startswith("| Select Random Points | 2 | `select id, k, c, pad")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert "plan" in cells[3].split(", ")
    assert "IndexRangeScan" in sec and "TableFullScan" in sec  # both plans, as text
    plan_a, plan_b = [x["plan_digest"][:10] for m in (a, b) for x in m["steps"][0]["statements"]["top"] if " in (" in x["text"]]
    assert cells[8] == f"`{plan_a}`" and cells[9] == f"`{plan_b}`"
    # the per-workload tables, after the workload's figures: each side's statement with its executions
    assert md.index("### Select Random Points performance") < md.index("### Select Random Points statements")
    for m in (a, b):
        x = next(x for x in m["steps"][0]["statements"]["top"] if " in (" in x["text"])
        assert f"| {x['executions']} |" in md


@pytest.mark.full
def test_mariadb_says_why_there_are_no_statements(stack):
    db = fresh_db("mariadb", "sbtest_stmts")
    common = ["-e", "mysql_port=3306", "-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=1000"]
    try:
        k6("run", *common, "prepare.js")
        (on,), = sql("mariadb", "SELECT @@performance_schema", db)
        m = k6_run(*common, "-e", "threads=2", "-e", "time=2")
        (step,) = m["steps"]
        st = step["statements"]
        if not on:
            assert st == {"available": False, "why": "performance_schema is OFF (a startup option: "
                                                     "performance_schema=ON in the server's configuration)"}
        else:  # a server with performance_schema: the figures, or why this user may not read them
            assert st["available"] or "GRANT SELECT ON performance_schema" in st["why"], st
    finally:
        sql("mariadb", f"DROP DATABASE {db}", db)


@pytest.mark.full
def test_tidb_without_its_statement_summary_says_why(stack):
    """tidb_enable_stmt_summary OFF (a global, put back afterwards): the run goes on, and its
    step says why it has no statements instead of listing nothing."""
    db = fresh_db("tidb", "sbtest_stmts_off")
    common = ["-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=1000"]
    (old,), = tidb_root("SELECT @@GLOBAL.tidb_enable_stmt_summary")
    try:
        k6("run", *common, "prepare.js")
        tidb_root("SET GLOBAL tidb_enable_stmt_summary = OFF")
        m = k6_run(*common, "-e", "threads=1", "-e", "time=1")
        (step,) = m["steps"]
        assert step["queries"]["total"] > 0
        assert step["statements"] == {"available": False, "why": "tidb_enable_stmt_summary is OFF (SET GLOBAL "
                                      "tidb_enable_stmt_summary = ON to record statements)"}, step["statements"]
    finally:
        tidb_root(f"SET GLOBAL tidb_enable_stmt_summary = {'ON' if str(old) in ('1', 'ON') else 'OFF'}")
        sql("tidb", f"DROP DATABASE {db}")
    (now,), = tidb_root("SELECT @@GLOBAL.tidb_enable_stmt_summary")
    assert str(now) == str(old)
