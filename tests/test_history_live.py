"""scripts/history on the local stack (issue #29): a real series of six short select_random_points
runs on TiDB, the optimizer's index lookup cost (tidb_opt_index_lookup_cost_factor) raised a million
times from the fourth run on (select_random_points' `k IN (...)` then scans the table instead of
looking up ten rows: plans/local-aab.json's idxcost arm) and always put back. Ingested, the QPS
change point lands on the fourth run, as a regression, and its evidence names the variable first,
then the statement whose plan changed. About 30 s.

The longer end-to-end series of docs/history.md (twelve runs, default settings) is
`tools/history-quality e2e`."""
import contextlib
import io
import json
import time

from conftest import fresh_db, k6, sql, tidb_root
from tidbbench.history import cli as history
import pytest

pytestmark = pytest.mark.full

VAR, VALUE = "tidb_opt_index_lookup_cost_factor", 1000000
RUNS, FLIP = 6, 3


def test_a_variable_flipped_midway_is_the_change_point_and_named_first(stack, tmp_path):
    db = fresh_db("tidb", "sbtest_history_live")
    common = ["-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=5000"]
    k6("run", "-q", *common, "prepare.js", env={"K6_OUT": ""})
    sql("tidb", "ANALYZE TABLE sbtest1", db=db)
    (old,), = tidb_root(f"SELECT @@GLOBAL.{VAR}")
    stamp = int(time.time())
    ids = [f"hlive-{stamp}-{i}" for i in range(RUNS)]
    try:
        for i, testid in enumerate(ids):
            if i == FLIP:
                tidb_root(f"SET GLOBAL {VAR} = {VALUE}")
            k6("run", "-q", *common, "-e", "workload=select_random_points", "-e", "threads=2", "-e", "time=2",
               "-e", "warmup_time=0", "-e", f"testid={testid}", "-e", f"results_dir={tmp_path}", "oltp.js")
    finally:
        tidb_root(f"SET GLOBAL {VAR} = {old}")
        sql("tidb", f"DROP DATABASE IF EXISTS {db}")
    assert tidb_root(f"SELECT @@GLOBAL.{VAR}")[0][0] == old
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert history.main(["ingest", "--results", str(tmp_path), "--min-segment", "3"]) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = history.main(["--results", str(tmp_path), "--min-segment", "3", "--series", "select_random_points/2t/",
                           "--json"])
    assert rc == 0
    doc = json.loads(out.getvalue())
    cps = [c for c in doc["change_points"] if c["metric"] == "qps"]
    qps = [round(json.loads((tmp_path / f"{t}.json").read_text())["steps"][0]["qps"]) for t in ids]
    # a step of about -85% is a level change on a host where runs vary by a few %; on one shared with
    # other heavy sessions (seen at load average 19 on 2 cores: 50 to 283 QPS before the flip) it is not
    assert len(cps) == 1, f"QPS {qps} (flip at run {FLIP}), load average {open('/proc/loadavg').read().split()[:3]}: {doc}"
    c = cps[0]
    assert (c["run_key_before"], c["run_key_after"]) == (ids[FLIP - 1], ids[FLIP])
    assert c["direction"] == "regression" and c["magnitude_pct"] < -30 and c["pvalue"] < 0.001
    first = c["evidence"][0]
    assert (first["kind"], first["name"], first["after"], first["consistency"]) == ("variable", VAR, str(VALUE), 1.0)
    kinds = [e["kind"] for e in c["evidence"]]
    stmt = next(e for e in c["evidence"] if e["kind"] == "statement")
    assert "plan" in stmt["why"] and "k in" in stmt["name"].lower(), c["evidence"]
    assert kinds.index("statement") < kinds.index("resource")
    # the resource lines are there (the server's CPU per query stays empty here: a 2-s step is
    # shorter than Prometheus' 5-s scrape, so no two samples bound it; docs/history.md's longer
    # series has it)
    assert {"server CPU per query", "client CPU per query"} <= {e["name"] for e in c["evidence"]}
