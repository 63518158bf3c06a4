"""Issue #9: numbers a DB engineer can trust. Every thread step is a clean sysbench run (fresh
connections, exactly `threads` of them, no key replayed across steps), select_random_* read
what sysbench reads, percentiles are sysbench's (one histogram per step, nearest rank), rates
divide by the measured elapsed time, and `rate` is sysbench's open model. Each against the
local TiDB and MariaDB, and against sysbench 1.0.20 where it has the figure."""
import math
import re
import subprocess
import threading
import time

import pytest

from conftest import TARGETS, fresh_db, k6, prom, prom_wait, rows_read, run_testid, sql, summary, sysbench_password_option, userstat

# quiet (conftest.py): it sets MariaDB's userstat and asserts elapsed times, rates and latency against sysbench
pytestmark = [pytest.mark.full, pytest.mark.quiet]


def prepared(target, name, tables=2, rows=2000, extra=()):
    db = fresh_db(target, f"sbtest_trust_{name}_{target}")
    k6("run", "-e", f"mysql_db={db}", "-e", f"mysql_port={TARGETS[target]}", "-e", f"tables={tables}",
       "-e", f"table_size={rows}", *extra, "prepare.js")
    return db


def run(target, db, *opts, check=True):
    args = ["-e", f"mysql_db={db}", "-e", f"mysql_port={TARGETS[target]}"]
    for o in opts:
        args += ["-e", o]
    p = k6("run", *args, "oltp.js", check=check)
    return p, summary(run_testid(p.stdout + p.stderr))


def settled(target, db, timeout=60):
    """Waits until no session of the server is in database db: a statement k6 interrupted at
    the end of a step's grace still runs to its end on the server after k6 has exited."""
    deadline = time.time() + timeout
    while sql(target, f"SELECT COUNT(*) FROM information_schema.processlist WHERE db = '{db}'")[0][0]:
        assert time.time() < deadline, f"sessions in {db} still running {timeout} s after k6 exited"
        time.sleep(0.2)


@pytest.mark.parametrize("target", ["tidb", "mariadb"])
def test_steps_replay_no_keys(stack, target):
    """oltp_insert with client-made ids (preset=tidb: auto_inc=false) and bulk_insert over
    three steps: no step inserts a key an earlier one inserted (no 1062 at all), and
    bulk_insert's rows in the tables are exactly the rows its steps counted."""
    db = prepared(target, "keys", extra=("-e", "preset=tidb"))
    # The prepared rows' ids 1..2000 are emptied out: a random unique id lands on one of them
    # with odds 2000/2^32 per insert (about 7% per run here, as in sysbench itself, and why
    # preset=tidb ignores 1062); what is tested is that no step replays another step's ids.
    for t in (1, 2):
        sql(target, f"TRUNCATE TABLE sbtest{t}", db)
    _, s = run(target, db, "workload=oltp_insert", "preset=tidb", "tables=2", "table_size=2000",
               "threads=2,4,6", "time=3")
    assert [st["threads"] for st in s["steps"]] == [2, 4, 6]
    codes = prom(f'k6_oltp_errors_total{{testid="{s["testid"]}"}}')
    for st in s["steps"]:
        assert st["transactions"] > 0 and st["errors"] == 0, (st, codes)
    assert not codes
    # every insert a step counted is a row, and no row is missing or extra
    settled(target, db)
    rows = sum(int(sql(target, f"SELECT COUNT(*) FROM sbtest{t}", db)[0][0]) for t in (1, 2))
    assert rows == sum(st["transactions"] for st in s["steps"]), (rows, [st["transactions"] for st in s["steps"]])
    sql(target, f"DROP DATABASE {db}")

    db = fresh_db(target, f"sbtest_trust_bulk_{target}")
    k6("run", "-e", f"mysql_db={db}", "-e", f"mysql_port={TARGETS[target]}", "-e", "workload=bulk_insert",
       "-e", "threads=4", "prepare.js")
    _, s = run(target, db, "workload=bulk_insert", "threads=2,4,3", "time=2")
    settled(target, db)
    rows = sum(int(sql(target, f"SELECT COUNT(*) FROM sbtest{t}", db)[0][0]) for t in range(1, 5))
    assert all(st["errors"] == 0 for st in s["steps"]), s["steps"]
    # every row counted in a step's measured window is in a table; the warm-up is off, so
    # the only rows not counted are none
    assert rows == sum(st["transactions"] for st in s["steps"]), (rows, [st["transactions"] for st in s["steps"]])
    # sysbench's packet limit: no statement is larger than 512 KiB, and most are close to it
    for st in s["steps"]:
        per_insert = st["transactions"] / max(1, st["queries"]["total"])
        assert 10_000 < per_insert < 512 * 1024 / 5, per_insert
    sql(target, f"DROP DATABASE {db}")


@pytest.mark.parametrize("target,per_vu", [("tidb", "auto"), ("mariadb", "auto"), ("tidb", "3"), ("mariadb", "3")])
def test_each_step_has_exactly_its_threads_connected(stack, target, per_vu):
    """During each step the server's processlist shows exactly `threads` connections of the
    run: a smaller step after a larger one holds no idle connections of the earlier one. Also
    with three threads per VU (threads_per_vu=3: 3, 1 and 2 VUs, the last with a thread short):
    every thread of a VU has its own connection, made and closed with its step."""
    db = prepared(target, f"conns{per_vu}", tables=1, rows=2000)
    samples = []
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            n = sql(target, f"SELECT COUNT(*) FROM information_schema.processlist WHERE db = '{db}'")[0][0]
            samples.append((time.time() * 1000, int(n)))
            time.sleep(0.25)
    t = threading.Thread(target=poll)
    t.start()
    try:
        _, s = run(target, db, "tables=1", "table_size=2000", "threads=8,3,5", "time=3", f"threads_per_vu={per_vu}")
    finally:
        stop.set()
        t.join()
    for st in s["steps"]:
        w = st["window"]
        inside = [n for at, n in samples if w["step_start"] + 300 <= at <= w["measure_end"] - 300]
        assert len(inside) >= 5, (st["threads"], samples)
        assert set(inside) == {st["threads"]}, (st["threads"], inside)
        assert st["vus_ready"] == st["threads"]
    sql(target, f"DROP DATABASE {db}")


def sysbench(workload, db, *opts, port=3306):
    args = ["sysbench", workload, "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={port}",
            "--mysql-user=sbtest", sysbench_password_option(), f"--mysql-db={db}", *opts, "run"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def result_rows_per_event(db):
    """TiDB's statements_summary: result rows per execution of select_random_points' SELECT in
    schema db (one execution per event). TiDB keeps AVG_RESULT_ROWS as a truncated integer
    (sum // count per summary row): the true mean lies in [value, value + 1)."""
    (n, rows), = sql("tidb", "SELECT SUM(EXEC_COUNT), SUM(EXEC_COUNT * AVG_RESULT_ROWS) "
                     "FROM information_schema.statements_summary "
                     f"WHERE SCHEMA_NAME = '{db}' AND DIGEST_TEXT LIKE 'select `id` , `k` , `c` , `pad` from `sbtest1` where `k` in%'")
    assert n, db
    return float(rows) / float(n)


def test_select_random_points_reads_what_sysbench_reads(stack):
    """table_size 10,000 over 3 threads (not a multiple), k and the draws uniform: the rows the
    IN() list matches per event (TiDB's statements_summary, each tool on its own copy of the
    table) equal sysbench 1.0.20's within sampling noise. Before the fix the thread slices were
    fractional, the parameters DOUBLEs, and far fewer rows matched."""
    dbs = {}
    for who in ("sb", "k6"):
        dbs[who] = prepared("tidb", f"pts{who}", tables=1, rows=10000, extra=("-e", "rand_type=uniform"))
    sysbench("select_random_points", dbs["sb"], "--tables=1", "--table-size=10000", "--threads=3", "--time=4",
             "--rand-type=uniform", port=4000)
    run("tidb", dbs["k6"], "workload=select_random_points", "tables=1", "table_size=10000", "threads=3",
        "time=4", "rand_type=uniform")
    sb_rows, ours = result_rows_per_event(dbs["sb"]), result_rows_per_event(dbs["k6"])
    assert sb_rows > 5, sb_rows
    # both true means are within 10% of each other: their [truncated, truncated + 1) intervals
    # overlap once widened by 10% (the fractional-slice bug matched about a third as many rows)
    assert ours + 1 > 0.9 * sb_rows and ours < 1.1 * (sb_rows + 1), (ours, sb_rows)
    for db in dbs.values():
        sql("tidb", f"DROP DATABASE {db}")


def test_select_random_ranges_reads_what_sysbench_reads(stack):
    """The same for select_random_ranges (whose client gets one COUNT row): the rows its BETWEEN
    ranges read per event, counted by MariaDB for the run's own table only (TABLE_STATISTICS;
    each tool on its own copy of the table, so nothing else adds to it), divided by the run's own
    events. One thread each: with several, sysbench gives each thread its own slice of the keys,
    and how many events each slice gets depends on how fast its thread runs. A range of another
    width, a DOUBLE bound or a wrong slice reads a different number of rows per event."""
    dbs = {}
    for who in ("sb", "k6"):
        dbs[who] = prepared("mariadb", f"rng{who}", tables=1, rows=10000, extra=("-e", "rand_type=uniform"))
    with userstat():
        r0 = rows_read(dbs["sb"])
        out = sysbench("select_random_ranges", dbs["sb"], "--tables=1", "--table-size=10000", "--threads=1",
                       "--time=4", "--rand-type=uniform")
        sb_events = int(re.search(r"transactions:\s+(\d+)", out).group(1))
        sb_rows = (rows_read(dbs["sb"]) - r0) / sb_events
        r0 = rows_read(dbs["k6"])
        _, s = run("mariadb", dbs["k6"], "workload=select_random_ranges", "tables=1", "table_size=10000", "threads=1",
                   "time=4", "rand_type=uniform")
        (st,) = s["steps"]
        # (the one event in flight when the step ends is read but not counted: at most 1 in thousands)
        ours = (rows_read(dbs["k6"]) - r0) / st["transactions"]
    assert sb_events > 500 and st["transactions"] > 500, (sb_events, st["transactions"])
    assert sb_rows > 5, sb_rows
    # the same SQL over the same table reads the same rows per event: well within 5% over
    # thousands of events (a range one key wider or narrower moves it by about 17%)
    assert abs(ours - sb_rows) <= 0.05 * sb_rows, (ours, sb_rows)
    for db in dbs.values():
        sql("mariadb", f"DROP DATABASE {db}")


@pytest.mark.parametrize("target", ["tidb", "mariadb"])
def test_percentile_is_sysbench_histogram_and_agrees_with_prometheus(stack, target):
    """The step's percentile is sysbench's (nearest rank over 1,024 log buckets, about 1.8%
    wide; unit-tested against sb_histogram.c's method in k6/ext/tbs), for `percentile` 95 and
    another value; rates divide by the measured elapsed time; and the figure lies in the
    Prometheus native histogram bucket (about 9% wide) that holds the same events' 95th
    percentile, give or take one sysbench bucket."""
    db = prepared(target, "pct")
    _, s = run(target, db, "workload=oltp_read_only", "tables=2", "table_size=2000", "threads=4", "time=5",
               "percentile=90")
    (st,) = s["steps"]
    lat = st["latency_ms"]
    assert lat["pct"] == 90 and lat["pct_value"] == lat["pct_value"]  # not NaN
    assert lat["min"] <= lat["p50"] <= lat["pct_value"] <= lat["p95"] <= lat["p99"] <= lat["max"] * 1.02
    h = st["histogram"]
    assert h["count"] == st["transactions"] and sum(c for _, c in h["counts"]) == h["count"]
    # rates over the measured elapsed time, which is at least the planned time
    assert st["elapsed_s"] >= 5 and st["elapsed_s"] < 6, st["elapsed_s"]
    assert st["tps"] == pytest.approx(st["transactions"] / st["elapsed_s"])
    # Prometheus: the same events in a native histogram
    w = st["window"]
    rng = f"{int((w['measure_end'] - w['step_start']) / 1000) + 10}s"
    sel = f'testid="{s["testid"]}",threads="4",warmup="false"'
    at = w["measure_end"] / 1000 + 8
    res = prom_wait(f"sum(last_over_time(k6_oltp_latency_seconds{{{sel}}}[{rng}] @ {at:.3f}))",
                    lambda r: r and r[0].get("histogram") and float(r[0]["histogram"][1]["count"]) == st["transactions"],
                    timeout=40)
    q = float(prom(f"histogram_quantile(0.95, sum(last_over_time(k6_oltp_latency_seconds{{{sel}}}[{rng}] @ {at:.3f})))")[0]["value"][1]) * 1000
    # k6's native histograms: schema 3, buckets (2^((i-1)/8), 2^(i/8)] in the metric's unit, seconds
    # (in milliseconds the edges would be shifted by 8 x log2(1000), 79.7 buckets: a 95th percentile
    # of 20.37 ms was once outside the edges so computed, inside the true bucket 20.26-22.10 ms)
    i = math.ceil(math.log2(q / 1000) * 8)
    lower, upper = 2 ** ((i - 1) / 8) * 1000, 2 ** (i / 8) * 1000
    step = math.exp((math.log(1e5) - math.log(1e-3)) / 1023)
    assert lower / step <= lat["p95"] <= upper * step, (lat["p95"], lower, upper, q, res)
    sql(target, f"DROP DATABASE {db}")


def test_rate_is_kept_with_service_latency_near_sysbench(stack):
    """`rate`: events arrive as a Poisson process and are taken by the step's threads. When the
    server keeps up, the achieved TPS is within 2% of the rate (20,000 events: a Poisson
    count's spread is 0.7%), and the service latency is close to sysbench's at the same rate."""
    db = prepared("mariadb", "rate", tables=1, rows=10000)
    out = sysbench("oltp_point_select", db, "--tables=1", "--table-size=10000", "--threads=8", "--time=10",
                   "--rate=2000", "--percentile=95")
    sb_avg = float(re.search(r"avg:\s+([\d.]+)", out).group(1))
    sb_p95 = float(re.search(r"95th percentile:\s+([\d.]+)", out).group(1))
    p, s = run("mariadb", db, "tables=1", "table_size=10000", "threads=8", "time=10", "rate=2000",
               "report_interval=2")
    (st,) = s["steps"]
    # sysbench's interval lines, with its second line for rate mode
    assert re.search(r"^\[ \d+s \] thds: 8 tps: [\d.]+ qps: [\d.]+ \(r/w/o: ", p.stdout + p.stderr, re.M), p.stdout + p.stderr
    assert re.search(r"^\[ \d+s \] queue length: \d+, concurrency: \d+$", p.stdout + p.stderr, re.M), p.stdout + p.stderr
    assert abs(st["tps"] - 2000) <= 0.02 * 2000, st["tps"]
    assert st["rate"]["dropped"] == 0 and st["rate"]["backlog_at_end"] < 50, st["rate"]
    lat, resp = st["latency_ms"], st["response_latency_ms"]
    # the same server at the same rate: service latencies of the same order (client costs
    # differ on a shared 2-core host; tools/bench compares them with separate cores)
    assert lat["avg"] <= 3 * sb_avg + 0.3 and lat["p95"] <= 3 * sb_p95 + 0.5, (lat, sb_avg, sb_p95)
    assert resp["avg"] >= lat["avg"] and resp["p95"] >= lat["p95"] * 0.98
    sql("mariadb", f"DROP DATABASE {db}")


def test_rate_beyond_capacity_grows_response_latency_not_service_latency(stack):
    """A rate the server cannot keep: the queue grows, response latency (from when each event
    was due) grows with it, service latency (sysbench's figure) does not, and the summary
    says the rate was not kept (sysbench 1.0.20 stops with "event queue is full")."""
    db = prepared("mariadb", "over", tables=1, rows=10000)
    p, s = run("mariadb", db, "workload=oltp_read_write", "tables=1", "table_size=10000", "threads=2",
               "time=6", "rate=20000")
    (st,) = s["steps"]
    lat, resp = st["latency_ms"], st["response_latency_ms"]
    assert st["tps"] < 0.5 * 20000
    assert st["rate"]["backlog_at_end"] + st["rate"]["dropped"] > 1000, st["rate"]
    assert resp["avg"] > 500 and resp["avg"] > 20 * lat["avg"], (resp, lat)
    assert lat["p95"] < 200, lat
    assert "NOT KEPT" in p.stdout
    sql("mariadb", f"DROP DATABASE {db}")


def test_seeded_strings_draw_one_number_per_digit():
    """With rand_seed, c and pad take one random number per '#', as sysbench's sb_rand_str
    (so a seeded run draws what sysbench would); unseeded, a run of digits takes one per 15
    digits (each digit still uniform and independent)."""
    from conftest import ROOT
    p = subprocess.run([str(ROOT / "bin/k6"), "run", "-q", "--no-summary", str(ROOT / "tests/k6/string_draws.js")],
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"DRAWS seeded=(\d+) unseeded=(\d+) C=([\d-]+)", p.stdout + p.stderr)
    assert m, p.stdout + p.stderr
    assert int(m.group(1)) == 110  # C_TEMPLATE: ten groups of 11 digits
    assert int(m.group(2)) == 10  # one per group of 11 (<= 15 digits)
    assert re.fullmatch(r"(\d{11}-){9}\d{11}", m.group(3))
