"""A thread step's load begins once every VU of the step has connected and prepared its
statements (connect_time=auto with one load generator: sysbench's barrier after thread_init),
not after a fixed connect phase; the step's window in the results file is the real one, and the
statements read at its start still come before its load; and each step's host disturbance
(k6/lib/disturb.js: the disturb VU is a party of the barrier, its canary comes before the load)
has every field, with plausible values for the local TiDB. Against the local TiDB."""
import os

from tidbbench import contract
from conftest import fresh_db, k6, run_testid, sql, summary
import pytest

# quiet (conftest.py): it asserts when the load starts within the connect phase, to the half second
pytestmark = [pytest.mark.full, pytest.mark.quiet]

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
        check_disturbance(s, w)


def check_disturbance(s, w):
    """The step's host disturbance over its measured window (docs/CONTRACT.md): every field, read
    at the window's edges, with figures a real run on the local TiDB gives."""
    d = s["disturbance"]
    assert d["available"], d
    assert abs(d["window"][0] - w["measure_start"]) < 300 and abs(d["window"][1] - w["measure_end"]) < 300, (d, w)
    assert d["cpus"] == os.cpu_count() and d["cpu_s"] == pytest.approx(d["cpus"] * d["window_s"], rel=0.2), d
    assert 0 <= d["steal_share"] < 1 and 0 < d["busy_cpu_s"] <= d["cpu_s"], d
    # k6 ran the step's events, TiDB (the listener of port 4000) answered them: both used CPU
    assert d["client_cpu_s"] > 0 and d["db_cpu_s"] > 0 and "tidb-server" in d["db_process"], d
    # the other processes: busy minus both, a share of the host (ticks of 10 ms round each figure)
    assert d["other_cpu_s"] == pytest.approx(d["busy_cpu_s"] - d["db_cpu_s"] - d["client_cpu_s"]), d
    assert -0.05 < d["other_share"] <= 1, d
    if os.path.exists("/proc/pressure/cpu"):
        assert 0 <= d["psi_some_share"] <= 1.01 and "psi_why" not in d, d
    else:
        assert d["psi_some_share"] is None and d["psi_why"], d
    # the canary, before the load and after the window: ms, not ns nor minutes
    for k in ("canary_before_ns", "canary_after_ns"):
        assert 1e6 < d[k] < 5e9, (k, d)
    assert d["canary_repeats"] >= 1 and "256 KiB" in d["canary_work"], d
