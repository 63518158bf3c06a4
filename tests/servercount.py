"""What the server itself counts of a run, per connection: its statements and the rows it read
for them, from the server's own statement log (issue #42: a thread that stops, or a slice of the
table that differs, shows there whatever the client reports).

Both servers log every statement while `logging(target)` is on:
  - MariaDB: the slow query log at long_query_time 0 into the table mysql.slow_log (thread_id,
    rows_examined), with log_slow_filter empty (every kind of statement);
  - TiDB: its slow query log at tidb_slow_log_threshold 0, read back through
    information_schema.slow_query (Conn_ID, Result_rows); the file is emptied before each run,
    so a read parses one run. The local TiDB's storage (unistore) reports no scanned keys
    (Total_keys and Process_keys are 0), so on TiDB the rows counted are the rows a statement
    returned: select_random_points' rows tell its slices apart there, select_random_ranges'
    count(k) does not (its shares of statements still do).
The settings are put back as they were afterwards. Only the statements of the sysbench tables
count (the workloads' SQL names them; a set-up query of either tool does not), and only those
that start with their verb: a test's own query starts with a comment. TiDB writes its log a
moment after a statement ends, so a query just before forget() can land in the next run's log."""
from contextlib import contextmanager

from conftest import STATE, mariadb_root, tidb_root

# the statements a workload runs on the sbtest tables (sysbench's SQL, ours the same; sysbench's
# select_random_* texts start with a new line and span several): a regular expression both
# servers read alike (MariaDB's PCRE, TiDB's Go regexp), without backslashes (SQL strings
# would take them)
WORKLOAD_SQL = "(?s)^[[:space:]]*(SELECT|UPDATE|DELETE|INSERT)[[:space:]].*sbtest[0-9]+"
TIDB_SLOW_LOG = STATE / "logs" / "tidb-slow.log"

MARIADB_SETTINGS = ("log_output", "long_query_time", "log_slow_filter", "slow_query_log")


@contextmanager
def logging(target):
    """Every statement logged by `target` while inside; its settings as they were afterwards."""
    if target == "mariadb":
        old = {k: mariadb_root(f"SELECT @@GLOBAL.{k}")[0][0] for k in MARIADB_SETTINGS}
        mariadb_root("SET GLOBAL log_output = 'TABLE', GLOBAL long_query_time = 0, GLOBAL log_slow_filter = '',"
                     " GLOBAL slow_query_log = 1")
        try:
            yield
        finally:
            mariadb_root(f"SET GLOBAL slow_query_log = {old['slow_query_log']}, GLOBAL log_output = '{old['log_output']}',"
                         f" GLOBAL long_query_time = {old['long_query_time']}, GLOBAL log_slow_filter = '{old['log_slow_filter']}'")
            mariadb_root("TRUNCATE TABLE mysql.slow_log")
    else:
        (old,), = tidb_root("SELECT @@GLOBAL.tidb_slow_log_threshold")
        tidb_root("SET GLOBAL tidb_slow_log_threshold = 0")
        try:
            yield
        finally:
            tidb_root(f"SET GLOBAL tidb_slow_log_threshold = {int(old)}")
            forget(target)


def forget(target):
    """Starts the next run's log: what was logged before is gone."""
    if target == "mariadb":
        mariadb_root("TRUNCATE TABLE mysql.slow_log")
    else:
        TIDB_SLOW_LOG.write_text("")  # TiDB appends (O_APPEND): its next entry starts the file


def per_connection(target, db):
    """{connection id: (statements, rows)} of the statements on `db`'s sysbench tables logged
    since forget(target): rows examined (MariaDB), rows returned (TiDB)."""
    if target == "mariadb":
        rows = mariadb_root("SELECT thread_id, COUNT(*), SUM(rows_examined) FROM mysql.slow_log "
                            f"WHERE db = '{db}' AND sql_text REGEXP '{WORKLOAD_SQL}' GROUP BY thread_id")
    else:
        rows = tidb_root("SELECT Conn_ID, COUNT(*), SUM(Result_rows) FROM information_schema.slow_query "
                         f"WHERE DB = '{db}' AND Is_internal = 0 AND Query REGEXP '{WORKLOAD_SQL}' GROUP BY Conn_ID")
    return {str(c): (int(n), float(r or 0)) for c, n, r in rows}
