"""The seeds' methods as plans (issue #23 step 5): plans/seed-*.json, one per published report.

- every seed plan loads and matches its seed's method, read from the seed's text
  ($TBS_SEEDS_DIR, default ../shared/seeds beside the checkout): tables x rows, thread steps, time, warm-up,
  rand-type, ANALYZE, data restore, SET GLOBAL variables, versions, workloads;
- --scale / --threads / --arm-target (tidbbench/sweep/seedplan.py): the arithmetic and the checks;
- bad input (unknown or missing arm target, --scale 0, 2, abc, ...) stops with exit 2 before
  anything runs and leaves no results;
- on the local stack: plans/seed-v2.0-vs-v1.0.json scaled down (32 tables x 1,000 rows, one
  workload, 1 and 2 threads, 1 s steps), both arms at the local TiDB, then `scripts/report
  plan-<id>`: the report states the scale and has both arms; the tables exist (about 20 s);
  three of the other four (they SET GLOBAL the seeds' TiDB variables) with their first workload
  at 1 thread for 1 s: each arm's runs saw its variables, and the plan put them back after (the
  fourth, seed-v6.1-vs-v6.0, runs in the doc-test as README.md writes it).
"""
import json
import os
import re
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import ROOT

from tidbbench import ReportError
from tidbbench.sweep import plan as planmod, seedplan

# serial (conftest.py): its plans set TiDB globals and assert each run saw its arm's
pytestmark = [pytest.mark.fast, pytest.mark.serial]

SEEDS = Path(os.environ.get("TBS_SEEDS_DIR") or ROOT.parent / "shared" / "seeds")  # beside the checkout
PLANS = sorted((ROOT / "plans").glob("seed-*.json"))
WORKLOAD_TERMS = {  # how the seeds name each workload
    "oltp_point_select": r"point[ _]select|standard `select` test",
    "oltp_update_non_index": r"update[ _]non[-_ ]index",
    "oltp_update_index": r"update[ _]index",
    "oltp_read_write": r"read[ _]write|standard oltp test",
    "oltp_insert": r"oltp_insert|standard `insert` test",
}


def load_json(p):
    return json.loads(Path(p).read_text())


def seed_text(plan):
    f = SEEDS / plan["source"]
    if not f.is_file():
        pytest.skip(f"the seed reports are not here ({f}; set TBS_SEEDS_DIR)")
    return f.read_text()


def version_key(v):
    return tuple(int(x) for x in re.findall(r"\d+", v))


def args(**kw):
    base = dict(scale=None, threads=None, time=None, warmup_time=None, workloads=None, mysql_db=None, arm_target=[])
    base.update(kw)
    return SimpleNamespace(**base)


# ---------------------------------------------------------------- each plan against its seed

def test_one_plan_per_seed_report():
    sources = [load_json(p)["source"] for p in PLANS]
    assert len(PLANS) == 5 and len(set(sources)) == 5, sources
    if SEEDS.is_dir():
        assert sorted(sources) == sorted(f.name for f in SEEDS.glob("*.txt"))


@pytest.mark.parametrize("path", PLANS, ids=[p.stem for p in PLANS])
def test_plan_matches_its_seed(path):
    plan = planmod.load(path)  # the plan format's own checks
    raw = load_json(path)
    text = seed_text(raw)
    low = text.lower()
    opts = plan["options"]
    assert raw["source"] in plan["description"] and plan["targets"] == "required"
    assert plan["repeats"] == 1  # each seed ran every step once

    # tables x rows: sysbench's prepare command, or the 2018 report's result tables
    m = re.search(r"prepare --tables=(\d+) --table-size=(\d+)", text)
    tables, rows = (int(m.group(1)), int(m.group(2))) if m else \
        next((int(a), int(b) * 1000000) for a, b in re.findall(r"\| (\d+) \| (\d+) million \|", text))
    assert (opts["tables"], opts["table_size"]) == (tables, rows)

    # thread steps: the first column of the result tables; "128 * 3" is 3 sysbench processes
    per_client = sorted({int(t) for t in re.findall(r"(\d+) \* 3 \|", text)})
    if per_client:
        assert plan["threads"] == [t * 3 for t in per_client]
        assert "3 sysbench processes" in plan["description"]
    else:
        steps = sorted({int(t) for t in re.findall(r"^\|\s*(\d+)\s*\|\s*[\d,.]+\s*\|", text, re.M)})
        assert plan["threads"] == steps

    # time per step, warm-up
    m = re.search(r"--time=(\d+)", text)
    if m:
        assert opts["time"] == int(m.group(1))
    else:
        assert opts["time"] == 300 and "does not state its time" in plan["description"]
    m = re.search(r"warm-up takes (\d+) minute", text)
    assert opts["warmup_time"] == (int(m.group(1)) * 60 if m else 0)
    assert m or not re.search(r"warm-?up|预热|ウォームアップ", low)

    # rand-type, ignored errors, auto-inc as the seed's sysbench command
    m = re.search(r"--rand-type=(\w+)", text)
    assert opts.get("rand_type") == (m.group(1) if m else None)
    m = re.search(r"--mysql-ignore-errors=([\d,]+)", text)
    assert opts.get("mysql_ignore_errors") == (m.group(1) if m else None)
    assert opts.get("auto_inc") == ("false" if "--auto-inc=false" in text else None)

    # ANALYZE; the data restored between workloads (reset) or prepared once
    assert plan.get("analyze", False) == ("analyze table" in low)
    restores = bool(re.search(r"restore|復元", low))
    assert plan.get("reset", False) == restores and plan.get("prepare", False) == (not restores)

    # SET GLOBAL: per version where the seed has a section per version, else on every arm
    names = [a["name"] for a in plan["arms"]]
    sections = re.split(r"#### TiDB (v[\d.]+) global variable configuration", text)
    if len(sections) > 1:
        want = {v: dict(re.findall(r"set global (\w+)\s*=\s*(\w+)", body, re.I))
                for v, body in zip(sections[1::2], sections[2::2])}
        assert sorted(want) == sorted(names)
    else:
        sg = dict(re.findall(r"set global (\w+)\s*=\s*(\w+)", text, re.I))
        want = {n: sg for n in names}
    for arm in plan["arms"]:
        assert {k: str(v) for k, v in arm.get("set_global", {}).items()} == want[arm["name"]], arm["name"]
        assert all(k in plan["description"] for k in want[arm["name"]])

    # versions: the seed's, baseline (the older) first; a one-version seed compares with 'other'
    mentioned = set(re.findall(r"v(\d+\.\d+(?:\.\d+)?(?:-rc\d+)?)\b", text))
    versions = [n for n in names if n != "other"]
    for n in versions:
        assert re.sub(r"(\d)rc", r"\1-rc", n[1:]) in mentioned, (n, sorted(mentioned))
    assert versions == sorted(versions, key=version_key)
    assert len(versions) == 2 or names == [versions[0], "other"]

    # workloads: exactly those the seed reports, in the seed's order of results
    reported = [w for w, term in WORKLOAD_TERMS.items() if re.search(term, low)]
    assert sorted(plan["workloads"]) == sorted(reported), reported
    results = low[min(low.find(h) for h in ("## test result", "## 测试结果", "## 試験結果") if h in low):]
    firsts = {w: re.search(WORKLOAD_TERMS[w], results).start() for w in plan["workloads"]}
    assert plan["workloads"] == sorted(plan["workloads"], key=firsts.get)


def test_one_list_of_thread_steps_where_the_seed_has_two():
    """Seed 002 runs point select and read write at 50/100/200, the others at 100/200/400: a
    plan has one list, the union, and its description says so."""
    p = load_json(ROOT / "plans/seed-v8.1.0-cloud.json")
    assert p["threads"] == [50, 100, 200, 400]
    assert "every workload runs 50, 100, 200 and 400 here" in p["description"]


# ---------------------------------------------------------------- scaling and targets (unit)

def test_scaled_rows():
    assert seedplan.scaled_rows(10_000_000, 0.001) == 10_000
    assert seedplan.scaled_rows(10_000_000, 1) == 10_000_000
    assert seedplan.scaled_rows(10_000_000, 0.00001) == 1000  # the minimum
    assert seedplan.scaled_rows(10_000_000, 0.00012346) == 1235  # rounded
    assert seedplan.scaled_rows(500, 0.5) == 500  # a plan smaller than the minimum keeps its size
    for bad in ("0", "2", "abc", "-0.1", "nan", "inf", ""):
        with pytest.raises(ReportError) as e:
            seedplan.parse_scale(bad)
        assert e.value.code == 2 and f"invalid --scale {bad}: a number F with 0 < F <= 1" in str(e.value)
    assert seedplan.parse_scale("1") == 1.0 and seedplan.parse_scale("1e-3") == 0.001


def test_apply_scales_rows_threads_time_and_points_arms():
    path = ROOT / "plans/seed-v6.1-vs-v6.0.json"
    plan = planmod.load(path)
    new, over, text = seedplan.apply(plan, path, args(
        scale="0.001", threads="1,2", time=5, warmup_time=1, workloads="oltp_read_write,oltp_point_select",
        mysql_db="sbtest_x", arm_target=["v6.0.0=10.0.0.1:4000", "v6.1.0=[::1]:4001"]))
    assert plan["options"]["table_size"] == 10_000_000 and plan["threads"] == [300, 600, 900]  # not changed
    o = new["options"]
    assert (o["tables"], o["table_size"], o["time"], o["warmup_time"], o["mysql_db"]) == (16, 10000, 5, 1, "sbtest_x")
    assert new["threads"] == [1, 2] and new["workloads"] == ["oltp_point_select", "oltp_read_write"]  # plan's order
    assert [a["options"] for a in new["arms"]] == [{"mysql_host": "10.0.0.1", "mysql_port": 4000},
                                                   {"mysql_host": "::1", "mysql_port": 4001}]
    assert new["arms"][1]["set_global"] == plan["arms"][1]["set_global"]
    assert over == {"scale": 0.001, "threads": [1, 2], "time": 5, "warmup_time": 1, "mysql_db": "sbtest_x",
                    "workloads": ["oltp_point_select", "oltp_read_write"],
                    "arm_targets": {"v6.0.0": "10.0.0.1:4000", "v6.1.0": "::1:4001"}}
    assert text.startswith("16 tables x 10,000 rows (plan: 16 x 10,000,000, --scale 0.001); threads 1, 2 "
                           "(plan: 300, 600, 900); time 5 s (plan: 1200 s); warmup_time 1 s (plan: 0 s)")
    # all=HOST:PORT: every arm at one target (an A/A of the method); nothing else changes
    new, over, text = seedplan.apply(plan, path, args(arm_target=["all=127.0.0.1:4000"]))
    assert {(a["options"]["mysql_host"], a["options"]["mysql_port"]) for a in new["arms"]} == {("127.0.0.1", 4000)}
    assert text is None and new["options"] == plan["options"]


@pytest.mark.parametrize("kw,message", [
    ({}, "needs a target for every arm; missing: v6.0.0, v6.1.0. Give --arm-target v6.0.0=HOST:PORT "
         "--arm-target v6.1.0=HOST:PORT (or --arm-target all=HOST:PORT"),
    ({"arm_target": ["v6.0.0=h:1"]}, "missing: v6.1.0."),
    ({"arm_target": ["v7=h:1"]}, "--arm-target v7=h:1: unknown arm 'v7' (valid: v6.0.0, v6.1.0, or all for every arm)"),
    ({"arm_target": ["all=h"]}, "invalid --arm-target all=h: the target must be HOST:PORT"),
    ({"arm_target": ["all=h:0"]}, "invalid --arm-target all=h:0: the target must be HOST:PORT"),
    ({"arm_target": ["h:4000"]}, "invalid --arm-target h:4000: write ARM=HOST:PORT (arms: v6.0.0, v6.1.0"),
    ({"arm_target": ["all=a:1", "v6.0.0=b:2"]}, "arm 'v6.0.0' is given two targets"),
    ({"arm_target": ["all=a:1"], "threads": "0,2"}, "invalid --threads 0,2: thread counts >= 1"),
    ({"arm_target": ["all=a:1"], "time": 0}, "invalid --time 0: must be >= 1"),
    ({"arm_target": ["all=a:1"], "workloads": "oltp_insert"},
     "--workloads: 'oltp_insert' is not one of the plan's workloads (valid: oltp_point_select, "),
    ({"arm_target": ["all=a:1"], "mysql_db": "x;drop"}, "invalid --mysql-db x;drop"),
])
def test_apply_rejects_bad_values(kw, message):
    path = ROOT / "plans/seed-v6.1-vs-v6.0.json"
    with pytest.raises(ReportError) as e:
        seedplan.apply(planmod.load(path), path, args(**kw))
    assert e.value.code == 2 and message in str(e.value), str(e.value)


def test_set_global_only_on_the_targets_of_the_arms_that_name_it():
    """v4.0 has no tidb_enable_async_commit: with one target per arm, each target is checked and
    set for its own arms' variables only, so the v4.0 target is never asked for it; with one
    target for both (an A/A of the method) that target gets every arm's variables."""
    path = ROOT / "plans/seed-v5.0-vs-v4.0.json"
    plan = planmod.load(path)

    def key(arm):
        return (arm["options"]["mysql_host"], arm["options"]["mysql_port"])
    two, _, _ = seedplan.apply(plan, path, args(arm_target=["v4.0=old:4000", "v5.0=new:4000"]))
    tv = planmod.target_vars(two, key)
    assert tv[("old", 4000)] == {"tidb_hashagg_final_concurrency", "tidb_hashagg_partial_concurrency"}
    assert tv[("new", 4000)] == set(plan["arms"][1]["set_global"]) and "tidb_enable_1pc" in tv[("new", 4000)]
    one, _, _ = seedplan.apply(plan, path, args(arm_target=["all=h:1"]))
    assert planmod.target_vars(one, key) == {("h", 1): set(plan["arms"][1]["set_global"])}


# ---------------------------------------------------------------- bad input on the command line

def sweep(*a, timeout=120):
    return subprocess.run([str(ROOT / "scripts/sweep"), *a], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("extra,message", [
    (["--arm-target", "v9=127.0.0.1:4000"], "unknown arm 'v9' (valid: v1.0.8, v2.0.0rc6, or all for every arm)"),
    ([], "needs a target for every arm; missing: v1.0.8, v2.0.0rc6"),
    (["--arm-target", "all=127.0.0.1:4000", "--scale", "0"], "invalid --scale 0: a number F with 0 < F <= 1"),
    (["--arm-target", "all=127.0.0.1:4000", "--scale", "2"], "invalid --scale 2: a number F with 0 < F <= 1"),
    (["--arm-target", "all=127.0.0.1:4000", "--scale", "abc"], "invalid --scale abc: a number F with 0 < F <= 1"),
    # what the plan file holds is not silently overridden from the command line
    (["--arm-target", "all=127.0.0.1:4000", "-e", "time=3"], "-e does not apply to --plan: set it in the plan file"),
    (["--arm-target", "all=127.0.0.1:4000", "--table-size", "10"], "--table-size does not apply to --plan"),
])
def test_bad_command_lines_stop_before_any_run(tmp_path, extra, message):
    res = tmp_path / "results"
    p = sweep("--plan", str(ROOT / "plans/seed-v2.0-vs-v1.0.json"), *extra, "--results", str(res), "--id", "bad")
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert not res.exists() or not any(res.iterdir())


def test_scale_and_arm_target_need_a_plan(tmp_path):
    res = tmp_path / "results"
    for flag, v in (("--scale", "0.1"), ("--arm-target", "a=h:1")):
        p = sweep("--workloads", "oltp_point_select", "--threads", "1", flag, v, "--results", str(res))
        assert p.returncode == 2 and f"{flag} applies to a plan (--plan FILE)" in p.stderr, p.stderr
    assert not res.exists() or not any(res.iterdir())


# ---------------------------------------------------------------- on the local stack

@pytest.mark.full
def test_seed_plan_small_end_to_end(stack, tmp_path):
    """plans/seed-v2.0-vs-v1.0.json (no SET GLOBAL, so nothing another test on the shared TiDB
    sees) at --scale 0.0001: 32 tables x 1,000 rows prepared once by the plan, point select at 1
    and 2 threads for 1 s, both arms at the local TiDB, then `scripts/report plan-<id>`."""
    from conftest import fresh_db, sql
    db = fresh_db("tidb", "sbtest_seed")
    res, out = tmp_path / "results", tmp_path / "report"
    pid = f"seed{int(time.time())}"
    t0 = time.time()
    p = sweep("--plan", "plans/seed-v2.0-vs-v1.0.json", "--arm-target", "all=127.0.0.1:4000", "--scale", "0.0001",
              "--threads", "1,2", "--time", "1", "--workloads", "oltp_point_select", "--mysql-db", db,
              "--results", str(res), "--id", pid, "--no-report", timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    state = load_json(res / f"plan-{pid}.json")
    assert state["status"] == "complete" and state["overrides"]["scale"] == 0.0001
    assert state["spec"]["options"]["table_size"] == 1000 and state["prepared"] == [f"127.0.0.1:4000/{db}"]
    assert len(state["order"]) == 2 and {t.split("-")[1] for t in state["order"]} == {"v1.0.8", "v2.0.0rc6"}
    # the plan prepared 32 tables of 1,000 rows
    tabs = [r[0] for r in sql("tidb", f"SELECT table_name FROM information_schema.tables WHERE table_schema='{db}'",
                              db=db)]
    assert sorted(tabs, key=lambda t: int(t[6:])) == [f"sbtest{i}" for i in range(1, 33)]
    assert sql("tidb", "SELECT COUNT(*) FROM sbtest32", db=db)[0][0] == 1000
    from test_report_helpers import run_report
    r = run_report("--results", str(res), "--out", str(out), f"plan-{pid}")
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    scaled = ("32 tables x 1,000 rows (plan: 32 x 10,000,000, --scale 0.0001); threads 1, 2 "
              "(plan: 384, 768, 1536, 3072); time 1 s (plan: 300 s); workloads oltp_point_select "
              "(plan: oltp_point_select, oltp_read_write, oltp_insert)")
    assert f"| Scaled | {scaled} | {scaled} |" in md, md[:4000]
    assert re.search(r"^# Sysbench Performance Test Report -- .*\[v2\.0\.0rc6\] vs\. .*\[v1\.0\.8\]$", md, re.M)
    assert "| Rows per table | 1000 | 1000 |" in md and "| Tables | 32 | 32 |" in md
    print(f"seed plan {pid}: {time.time() - t0:.0f} s")
    sql("tidb", f"DROP DATABASE {db}")


# seed-v6.1-vs-v6.0 is run by the doc-test, as README.md writes it (laptop-sized, both arms at the
# local TiDB, --drop-global tidb_enable_async_commit,tidb_enable_1pc): the plan reads each SET GLOBAL
# back and stops when a value does not take, so that run passing means every variable of both arms
# but those two took (tidb_prepared_plan_cache_size, which only this plan sets, included). How runs
# see an arm's variables and how the plan puts them back is the same code for every plan (the three
# here check it through the run manifests); the two it leaves out are set by seed-v5.0-vs-v4.0's
# v5.0 arm here.
SET_GLOBAL_PLANS = [p for p in PLANS if any(a.get("set_global") for a in load_json(p)["arms"])
                    and p.name != "seed-v6.1-vs-v6.0.json"]


def tidb_globals(names):
    from conftest import tidb_root
    return {n: str(tidb_root(f"SELECT @@GLOBAL.{n}")[0][0]) for n in names}


@pytest.mark.full
@pytest.mark.parametrize("path", SET_GLOBAL_PLANS, ids=[p.stem for p in SET_GLOBAL_PLANS])
def test_seed_plans_with_set_global_run_small(stack, tmp_path, path):
    """Each seed plan that sets TiDB variables, run as a user would at the smallest scale (its
    first workload, 1 thread, 1 s without warm-up, both arms at the local TiDB, its own database; the copy run
    here has 2 tables instead of 16 or 32, for time: the data reset and ANALYZE are per table):
    it completes with its data prepared as the plan says, each arm's runs started with the arm's
    variables (the run manifests' SHOW GLOBAL VARIABLES), and every variable is back to its value
    from before the plan. A variable today's TiDB no longer takes (v2.1/v3.0's
    tidb_disable_txn_auto_retry = 0: today's TiDB keeps it ON) stops the plan before that arm's first run,
    naming it, and the variables are put back all the same."""
    from conftest import fresh_db, sql
    plan = load_json(path)
    names = sorted({v for a in plan["arms"] for v in (a.get("set_global") or {})})
    before = tidb_globals(names)
    plan["options"]["tables"] = 2
    small = tmp_path / path.name
    small.write_text(json.dumps(plan))
    db = fresh_db("tidb", "sbtest_seed")
    res = tmp_path / "results"
    pid = f"seed{int(time.time())}"
    p = sweep("--plan", str(small), "--arm-target", "all=127.0.0.1:4000", "--scale", "0.0001", "--threads", "1",
              "--time", "1", "--warmup-time", "0", "--workloads", plan["workloads"][0], "--mysql-db", db,
              "--results", str(res), "--id", pid, "--no-report", timeout=300)
    try:
        assert tidb_globals(names) == before
        fixed_on = {v for a in plan["arms"] for v, x in (a.get("set_global") or {}).items()
                    if v == "tidb_disable_txn_auto_retry" and not planmod.same_value(x, before[v])}
        if fixed_on:
            assert p.returncode != 0
            assert "SET GLOBAL tidb_disable_txn_auto_retry = 0 left it at 1 (the target's tidb_disable_txn_auto_retry " \
                   "does not take that value" in p.stderr, p.stderr
            return
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        state = load_json(res / f"plan-{pid}.json")
        assert state["status"] == "complete" and len(state["order"]) == len(plan["arms"])
        assert sql("tidb", "SELECT COUNT(*) FROM sbtest2", db=db)[0][0] == 1000
        for arm in plan["arms"]:
            runs = [r["testid"] for r in load_json(res / f"sweep-{pid}-{arm['name']}.json")["runs"]]
            assert runs
            for testid in runs:
                seen = load_json(res / f"{testid}.json")["target_variables"]
                for v, want in (arm.get("set_global") or {}).items():
                    assert planmod.same_value(seen[v], want), (arm["name"], v, seen[v], want)
    finally:
        sql("tidb", f"DROP DATABASE IF EXISTS {db}")


# ---------------------------------------------------------------- unistore: async commit and 1PC (issue #28)

def test_drop_global_leaves_the_variables_out_of_every_arm():
    path = ROOT / "plans/seed-v6.1-vs-v6.0.json"
    plan = planmod.load(path)
    new, over, text = seedplan.apply(plan, path, args(arm_target=["all=h:1"],
                                                      drop_global="tidb_enable_async_commit,tidb_enable_1pc"))
    for arm, was in zip(new["arms"], plan["arms"]):
        assert set(arm["set_global"]) == set(was["set_global"]) - {"tidb_enable_async_commit", "tidb_enable_1pc"}
    assert over["drop_global"] == ["tidb_enable_async_commit", "tidb_enable_1pc"]
    assert "set_global without tidb_enable_async_commit, tidb_enable_1pc (plan: sets them)" in text
    for bad, valid in (("tidb_nope", "valid: tidb_enable_1pc, "), ("", "valid: tidb_enable_1pc, ")):
        with pytest.raises(ReportError) as e:
            seedplan.apply(plan, path, args(arm_target=["all=h:1"], drop_global=bad or ","))
        assert e.value.code == 2 and "--drop-global: '" in str(e.value) and valid in str(e.value), str(e.value)


def test_unistore_conflict_names_the_variables_and_the_ways_around():
    plan = planmod.load(ROOT / "plans/seed-v6.1-vs-v6.0.json")
    names = [a["name"] for a in plan["arms"]]
    msg = planmod.unistore_conflict(plan, names, "unistore")
    for part in ("tidb_enable_1pc=ON, tidb_enable_async_commit=ON", "Store: unistore", "error 8141",
                 "oltp_update_non_index, oltp_update_index, oltp_read_write",
                 "--drop-global tidb_enable_1pc,tidb_enable_async_commit", "--workloads oltp_point_select",
                 "real cluster", "(nothing was run)"):
        assert part in msg, (part, msg)
    assert planmod.unistore_conflict(plan, names, "tikv") is None  # a real cluster
    assert planmod.unistore_conflict(plan, names, None) is None  # not TiDB
    reads = dict(plan, workloads=["oltp_point_select"])
    assert planmod.unistore_conflict(reads, names, "unistore") is None  # nothing writes
    v5 = planmod.load(ROOT / "plans/seed-v5.0-vs-v4.0.json")  # only the v5.0 arm sets them
    assert planmod.unistore_conflict(v5, ["v4.0"], "unistore") is None
    assert "arm(s) v5.0 set" in planmod.unistore_conflict(v5, ["v4.0", "v5.0"], "unistore")
    off = json.loads(json.dumps(plan))
    for arm in off["arms"]:
        arm["set_global"].update(tidb_enable_async_commit=0, tidb_enable_1pc="OFF")
    assert planmod.unistore_conflict(off, names, "unistore") is None


@pytest.mark.full
def test_v61_plan_stops_on_the_local_unistore_before_anything_runs(stack, tmp_path):
    """The README's seed plan without the way around, on the local TiDB: exit 2 before any run,
    naming the variables and the options; no variable changed, no run written."""
    from conftest import tidb_root
    (store,), = tidb_root("SELECT tidb_version()")
    assert "Store: unistore" in store, store  # what the check reads
    before = tidb_globals(["tidb_enable_async_commit", "tidb_enable_1pc"])
    res = tmp_path / "results"
    p = sweep("--plan", "plans/seed-v6.1-vs-v6.0.json", "--arm-target", "all=127.0.0.1:4000", "--scale", "0.0001",
              "--threads", "2", "--time", "1", "--mysql-db", "sbtest_docs_unistore", "--results", str(res),
              "--id", "unistore", "--no-report")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "127.0.0.1:4000: arm(s) v6.0.0, v6.1.0 set tidb_enable_1pc=ON, tidb_enable_async_commit=ON" in p.stderr
    assert "--drop-global tidb_enable_1pc,tidb_enable_async_commit" in p.stderr, p.stderr
    assert tidb_globals(["tidb_enable_async_commit", "tidb_enable_1pc"]) == before
    assert not res.exists() or not list(res.glob("*.json"))
    tidb_root("DROP DATABASE IF EXISTS sbtest_docs_unistore")


@pytest.mark.full
def test_a_plan_that_prepares_creates_its_missing_database(stack, tmp_path):
    """plans/local-aab.json on a fresh stack (issue #28): its database does not exist yet. The
    plan prepares its table (prepare: true), so it creates the database first and runs; a plan
    that does not prepare stops before anything runs, naming the database and the command that
    prepares it. (Its arms without set_global and one short sample each: the shared TiDB's
    variables are not touched.)"""
    from conftest import sql, tidb_root
    db = "sbtest_docs_newdb"
    tidb_root(f"DROP DATABASE IF EXISTS {db}")
    plan = load_json(ROOT / "plans/local-aab.json")
    assert plan["prepare"] is True and plan["options"]["mysql_db"] == "sbtest_aab"
    plan["arms"] = [a for a in plan["arms"] if not a.get("set_global")]
    plan.update(repeats=1, workloads=["oltp_point_select"], threads=[1])
    plan["options"].update(time=1, mysql_db=db)
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(dict(plan, prepare=False)))
    p = sweep("--plan", str(f), "--results", str(tmp_path / "r1"), "--id", "nodb", "--no-report")
    assert p.returncode == 2 and f"database '{db}' does not exist on 127.0.0.1:4000" in p.stderr, p.stderr
    assert f"scripts/k6 run -e mysql_db={db} -e tables=N -e table_size=N k6/prepare.js" in p.stderr
    assert not tidb_root(f"SHOW DATABASES LIKE '{db}'")
    f.write_text(json.dumps(plan))
    try:
        p = sweep("--plan", str(f), "--results", str(tmp_path / "r2"), "--id", "newdb", "--no-report", timeout=300)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        assert f"plan: created database {db} on 127.0.0.1:4000" in p.stdout
        assert sql("tidb", "SELECT COUNT(*) FROM sbtest1", db=db)[0][0] == 20000
    finally:
        tidb_root(f"DROP DATABASE IF EXISTS {db}")
