"""The team's history store: mirrors the embedded index (results/history.sqlite) into PostgreSQL,
which Grafana's built-in PostgreSQL data source (the History dashboard) and Apache Otava read.

    push(sqlite_path, conninfo_file) -> rows written

creates the tables when they are missing (tidbbench/history/schema.py, the one table spec),
then, in ONE transaction, upserts every run, point and change point of the file (run again,
nothing changes: the primary keys decide) and replaces the store's change points of the series
the file has points of by the file's (a change point that a later detection no longer finds
leaves the store too). Any error rolls everything back: the store is never half written.
Several hosts may push into one store: runs and points only ever add up.

The connection comes from a file holding a libpq connection string (key=value ...: host, port,
dbname, user, password or passfile, sslmode, ...), never from an argument: the local stack
writes .stack/history-db.conninfo (the writer's, mode 600); compose's passwords.py writes one
into the history-writer volume. A file that holds a password must be private (mode 600).

    scripts/history push [--index results/history.sqlite] [--conninfo .stack/history-db.conninfo]

Client: psycopg 3 (binary wheel, pinned in requirements.txt): the maintained PostgreSQL driver
of the Python world, libpq inside the wheel (nothing to compile, no Debian libpq), real
server-side parameters and one-transaction `with conn.transaction()`.
"""
import os
import sqlite3
import stat
from pathlib import Path

from tidbbench import ROOT, ReportError, contract
from tidbbench.history.schema import ORDER, TABLES, columns, pg_ddl, pg_type

# the index scripts/history writes: <results>/history.sqlite, the results folder as the other
# commands take it (tidbbench.contract.results_dir)
DEFAULT_SQLITE = contract.results_dir() / "history.sqlite"
STATE = Path(os.environ.get("TBS_STATE", ROOT / ".stack"))
DEFAULT_CONNINFO = STATE / "history-db.conninfo"


def _err(msg, code=2):
    return ReportError(msg, code=code)


def read_conninfo(path):
    """The libpq connection string of `path`, checked (never printed: it may hold a password)."""
    from psycopg import conninfo as ci

    p = Path(path)
    if not p.is_file():
        raise _err(f"connection file {path} does not exist (the local stack writes "
                   f"{DEFAULT_CONNINFO} at `scripts/stack up`; docs/history-store.md)")
    try:
        text = p.read_text().strip()
    except OSError as e:
        raise _err(f"connection file {path} cannot be read: {e.strerror}")
    try:
        params = ci.conninfo_to_dict(text)
    except Exception:  # psycopg's message may quote the text, and with it a password
        raise _err(f"connection file {path} is not a libpq connection string "
                   "(valid: key=value pairs such as host=127.0.0.1 port=5432 dbname=tbs_history user=...)")
    if not params.get("dbname") or not params.get("user"):
        raise _err(f"connection file {path} names no dbname or no user (valid: a libpq connection string "
                   "with at least dbname= and user=)")
    if "password" in params and stat.S_IMODE(p.stat().st_mode) & 0o077:
        raise _err(f"connection file {path} holds a password but others may read it "
                   f"(mode {stat.S_IMODE(p.stat().st_mode):o}): chmod 600 {path}")
    params.setdefault("connect_timeout", "10")
    params.setdefault("application_name", "tbs-history-push")
    return ci.make_conninfo(**params)


def read_sqlite(sqlite_path):
    """{table: [row tuple in columns() order]} of the index; ReportError naming a missing file,
    table or column."""
    p = Path(sqlite_path)
    if not p.is_file():
        raise _err(f"history index {sqlite_path} does not exist (scripts/history ingest writes it)")
    try:
        db = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise _err(f"history index {sqlite_path} cannot be opened: {e}")
    out = {}
    try:
        for t in ORDER:
            want = columns(t)
            try:
                have = [r[1] for r in db.execute(f"PRAGMA table_info({t})")]
            except sqlite3.DatabaseError as e:
                raise _err(f"history index {sqlite_path} is not an SQLite database: {e}")
            if not have:
                raise _err(f"history index {sqlite_path} has no table {t} (valid: the tables of "
                           f"tidbbench/history/schema.py: {', '.join(ORDER)})")
            missing = [c for c in want if c not in have]
            if missing:
                raise _err(f"history index {sqlite_path}: table {t} lacks column(s) {', '.join(missing)} "
                           f"(valid: {', '.join(want)})")
            out[t] = db.execute(f"SELECT {', '.join(want)} FROM {t} ORDER BY {', '.join(TABLES[t]['primary_key'])}").fetchall()
    finally:
        db.close()
    return out


def upsert_sql(table):
    cols = columns(table)
    pk = TABLES[table]["primary_key"]
    values = ", ".join(f"%s::{pg_type(table, c)}" for c in cols)
    update = ", ".join(f"{c} = EXCLUDED.{c}" for c in cols if c not in pk)
    return (f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({values}) "
            f"ON CONFLICT ({', '.join(pk)}) DO UPDATE SET {update}")


def push(sqlite_path, conninfo_file):
    """Mirror the index at sqlite_path into the store of conninfo_file; returns the rows written
    (upserted runs + points + change points). ReportError on bad input or a store error, after
    which the store holds what it held before."""
    import psycopg

    rows = read_sqlite(sqlite_path)
    dsn = read_conninfo(conninfo_file)
    written = 0
    try:
        with psycopg.connect(dsn) as conn:
            with conn.transaction():
                with conn.cursor() as cur:
                    # one pusher at a time (two hosts' nightly pushes may meet)
                    cur.execute("SELECT pg_advisory_xact_lock(hashtext('tbs-history-push'))")
                    cur.execute(pg_ddl())
                    for t in ORDER:
                        if rows[t]:
                            cur.executemany(upsert_sql(t), rows[t])
                            written += len(rows[t])
                    # the file's detection is the truth for the series it has points of
                    series = sorted({r[columns("points").index("series")] for r in rows["points"]})
                    keep = [(r[0], r[1], r[3]) for r in rows["change_points"]]
                    cur.execute(
                        "DELETE FROM change_points WHERE series = ANY(%s::text[]) AND "
                        "(series, metric, run_key_after) NOT IN (SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]))",
                        (series, [k[0] for k in keep], [k[1] for k in keep], [k[2] for k in keep]))
    except psycopg.Error as e:
        # libpq's and the server's messages name hosts, tables and values, never the password
        diag = getattr(e, "diag", None)
        where = f" ({diag.table_name})" if diag is not None and diag.table_name else ""
        raise ReportError(f"history store: nothing was written: {type(e).__name__}{where}: "
                          f"{str(e).strip().splitlines()[0] if str(e).strip() else 'no message'}", code=1)
    return written
