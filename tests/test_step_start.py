"""A thread step's load begins once every VU of the step has connected and prepared its
statements (connect_time=auto with one load generator: sysbench's barrier after thread_init),
not after a fixed connect phase; the step's window in the results file is the real one, and the
statements read at its start still come before its load. Against the local TiDB."""

from tidbbench import contract
from conftest import fresh_db, k6, run_testid, sql, summary
import pytest

pytestmark = pytest.mark.full

POINT_SELECT = "select `c` from `sbtest1` where `id` = ?"


def test_the_load_begins_when_every_vu_has_connected(stack):
    db = fresh_db("tidb", "sbtest_stepstart")
    common = ["-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=1000"]
    k6("run", *common, "prepare.js")
    # the suite's default connect_time is 1 s (conftest): this run has the users' auto
    p = k6("run", *common, "-e", "threads=3,6", "-e", "time=2", "-e", "connect_time=auto", "-e", "grace_time=1",
           "oltp.js")
    m = summary(run_testid(p.stdout + p.stderr))
    sql("tidb", f"DROP DATABASE {db}")
    steps = {s["threads"]: s for s in m["steps"]}
    assert sorted(steps) == [3, 6], m["steps"]
    # the planned connect phase of each step (k6/contract.json timing; 3 s for these) and the
    # scenarios' grid: step 3 starts at run_start, step 6 after 3 s connect + 2 s + 1 s grace
    connect = {n: 1000 * contract.connect_seconds(n, "auto") for n in steps}
    scenario = {3: m["run_start"], 6: m["run_start"] + connect[3] + 2000 + 1000}
    for n, s in steps.items():
        w = s["window"]
        assert s["vus_ready"] == n, s
        # the load began well before the planned connect phase ended: when the VUs (a few ms
        # each) and the statements VU's first read were done
        assert scenario[n] <= w["step_start"] < scenario[n] + connect[n] - 500, (n, w, scenario[n], connect[n])
        assert w["measure_start"] == w["step_start"] and w["measure_end"] - w["measure_start"] == 2000, w
        assert w["step_end"] - w["measure_end"] == 1000, w
        assert s["queries"]["total"] > 0 and s["queries"]["read"] == s["queries"]["total"] == s["transactions"], s
        # the statement summary read at the step's start came before its first event, the one at
        # its end after its last: TiDB counted exactly the step's point selects
        st = s["statements"]
        assert st["available"] and "partial" not in st, st
        (x,) = [x for x in st["top"] if x["text"] == POINT_SELECT]
        assert x["executions"] == s["queries"]["total"], (x, s["queries"])
