"""Issue #3: errors are handled as sysbench handles them. An ignored error rolls the event
back and restarts it; any other error stops the run with the error's code; a connection lost
inside a transaction restarts the whole event on a new connection (counted as a reconnect),
and the rest of the event never runs in autocommit."""
import threading
import time

import pymysql

from conftest import STATE, TARGETS, fresh_db, k6, prom_wait, run_testid, sql, summary


def admin(target):
    if target == "tidb":
        pw = (STATE / "secrets" / "tidb-root").read_text().strip()
        return pymysql.connect(host="127.0.0.1", port=4000, user="root", password=pw, autocommit=True)
    return pymysql.connect(unix_socket=str(STATE / "run" / "mariadb.sock"), user="root", autocommit=True)


def prepared(target, tables=2, rows=2000):
    db = fresh_db(target, f"sbtest_err_{target}_{int(time.time() * 1000) % 10**9}")
    k6("run", "-e", f"mysql_db={db}", "-e", f"mysql_port={TARGETS[target]}", "-e", f"tables={tables}",
       "-e", f"table_size={rows}", "prepare.js")
    return db


def later(seconds, fn):
    t = threading.Timer(seconds, fn)
    t.start()
    return t


# A table dropped in the middle of a run is a sure source of errors. MariaDB answers 1146
# (no such table); TiDB answers 8113/8028 (schema changed) first, so these two use MariaDB.
def test_ignored_error_restarts_the_event_and_is_counted(stack):
    db = prepared("mariadb")
    later(4, lambda: sql("mariadb", "DROP TABLE sbtest2", db))  # from now on, half the events fail with 1146
    p = k6("run", "-e", f"mysql_db={db}", "-e", "mysql_port=3306", "-e", "tables=2", "-e", "table_size=2000",
           "-e", "threads=2", "-e", "time=8", "-e", "mysql_ignore_errors=1146", "-e", "workload=oltp_read_write", "oltp.js")
    testid = run_testid(p.stdout + p.stderr)
    (step,) = summary(testid)["steps"]
    assert step["errors"] > 0 and step["transactions"] > 0
    prom_wait(f'sum(max_over_time(k6_oltp_errors_total{{testid="{testid}",code="1146",ignored="true"}}[10m]))',
              lambda r: r and float(r[0]["value"][1]) == step["errors"])
    # every event that failed was rolled back: delete/insert pairs on sbtest1 kept its rows
    assert sql("mariadb", "SELECT COUNT(*) FROM sbtest1", db)[0][0] == 2000
    sql("mariadb", f"DROP DATABASE {db}")


def test_error_not_ignored_stops_the_run(stack):
    db = prepared("mariadb")
    later(3, lambda: sql("mariadb", "DROP TABLE sbtest2", db))
    t0 = time.time()
    p = k6("run", "-e", f"mysql_db={db}", "-e", "mysql_port=3306", "-e", "tables=2", "-e", "table_size=2000",
           "-e", "threads=2", "-e", "time=30", "oltp.js", check=False)
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert "FATAL: error 1146 from 127.0.0.1:3306 as user 'sbtest'" in out
    assert "doesn't exist" in out
    assert time.time() - t0 < 20, "the run went on after the fatal error"
    sql("mariadb", f"DROP DATABASE {db}")


def kill_clients(target, db, times, every):
    """Kills every connection of the benchmark's database a few times during the run."""
    def run():
        with admin(target) as c, c.cursor() as cur:
            for _ in range(times):
                time.sleep(every)
                cur.execute("SELECT id FROM information_schema.processlist WHERE user = 'sbtest' AND db = %s", (db,))
                for (cid,) in cur.fetchall():
                    try:
                        cur.execute(f"KILL {int(cid)}")
                    except pymysql.MySQLError:
                        pass  # it ended by itself
    t = threading.Thread(target=run)
    t.start()
    return t


def lost_connections(target):
    db = prepared(target)
    killer = kill_clients(target, db, times=4, every=2.5)
    p = k6("run", "-e", f"mysql_db={db}", "-e", f"mysql_port={TARGETS[target]}", "-e", "tables=2",
           "-e", "table_size=2000", "-e", "threads=4", "-e", "time=12", "-e", "workload=oltp_read_write",
           "-e", "mysql_ignore_errors=1213,1020,1205,2013,1317,1053,8022,8028,9007", "oltp.js")
    killer.join()
    (step,) = summary(run_testid(p.stdout + p.stderr))["steps"]
    assert step["reconnects"] > 0, step
    assert step["transactions"] > 0
    # killed transactions were rolled back by the server and restarted whole: no half event
    # (a DELETE without its INSERT) was committed on a new connection
    for t in (1, 2):
        assert sql(target, f"SELECT COUNT(*) FROM sbtest{t}", db)[0][0] == 2000
    sql(target, f"DROP DATABASE {db}")


def test_lost_connection_restarts_the_event_tidb(stack):
    lost_connections("tidb")


def test_lost_connection_restarts_the_event_mariadb(stack):
    lost_connections("mariadb")
