"""Helpers (no tests here) for the history store's tests (test_history_store, test_history_dashboard):
the local stack's PostgreSQL (service history_db, started by `scripts/stack up`), a database of
the test's own made with the real compose/history/roles.sql, an index (SQLite) made with the
one table spec (tidbbench/history/schema.py) holding synthetic runs, and the SQL the History
dashboard's Grafana PostgreSQL data source sends (test_history_dashboard, test_history_live)."""
import os
import re
import socket
import sqlite3
import stat
import subprocess
import uuid
from contextlib import contextmanager

import psycopg

import dashtools
from conftest import ROOT, STATE, locked
from tidbbench.history import schema as historyschema

PORT = None


def port():
    global PORT
    if PORT is None:
        out = subprocess.run(["python3", "-m", "tidbbench.gen.runtime", "--ports"],
                             capture_output=True, text=True, check=True).stdout
        PORT = int(dict(line.split("=", 1) for line in out.splitlines())["history_db"])
    return PORT


def secret(name):
    return (STATE / "secrets" / name).read_text().strip()


def up():
    """Whether the stack's history_db answers."""
    try:
        with socket.create_connection(("127.0.0.1", port()), timeout=2):
            return (STATE / "secrets" / "history-db-admin").is_file()
    except OSError:
        return False


def connect(user, dbname, password=None, **kw):
    pw = password if password is not None else secret(
        {"postgres": "history-db-admin", "tbs_history_writer": "history-db-writer",
         "tbs_history_reader": "history-db-reader"}[user])
    return psycopg.connect(host="127.0.0.1", port=port(), user=user, password=pw, dbname=dbname,
                           connect_timeout=5, **kw)


def run_roles_sql(dbname):
    """compose/history/roles.sql, as scripts/stack runs it, for the database dbname."""
    script = (f"\\set dbname {dbname}\n\\set writer_password '{secret('history-db-writer')}'\n"
              f"\\set reader_password '{secret('history-db-reader')}'\n"
              + (ROOT / "compose/history/roles.sql").read_text())
    env = {**os.environ, "PGPASSWORD": secret("history-db-admin")}
    # one at a time: two test processes' ALTER ROLE of the same roles at once fail ("tuple
    # concurrently updated")
    with locked("history-roles"):
        subprocess.run(["psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(port()), "-U", "postgres", "-d", "postgres",
                        "-v", "ON_ERROR_STOP=1", "-f", "-"], input=script, text=True, env=env, check=True,
                       capture_output=True)


@contextmanager
def own_database(tmp_path):
    """A database of the test's own (tbs_history_test_<hex>, same users and grants as the store's)
    and the writer's connection file for it; dropped afterwards."""
    name = f"tbs_history_test_{uuid.uuid4().hex[:10]}"
    run_roles_sql(name)
    conninfo = tmp_path / "writer.conninfo"
    conninfo.write_text(f"host=127.0.0.1 port={port()} dbname={name} user=tbs_history_writer "
                        f"password={secret('history-db-writer')}\n")
    os.chmod(conninfo, stat.S_IRUSR | stat.S_IWUSR)
    try:
        yield name, conninfo
    finally:
        with connect("postgres", "postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ---------------------------------------------------------------------------------------------
# a synthetic index: one series per workload x threads, nightly runs a day apart
# ---------------------------------------------------------------------------------------------
def make_index(path, runs, points, change_points=()):
    """results/history.sqlite as the core ingest writes it (the tables of historyschema.sqlite_ddl)."""
    db = sqlite3.connect(path)
    db.executescript(historyschema.sqlite_ddl())
    for table, rows in (("runs", runs), ("points", points), ("change_points", change_points)):
        cols = historyschema.columns(table)
        for r in rows:
            db.execute(f"INSERT OR REPLACE INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                       [r.get(c) for c in cols])
    db.commit()
    db.close()
    return path


def run_row(i, version="v8.5.6", day0="2026-11-01"):
    import datetime as dt
    t = dt.datetime.fromisoformat(day0 + "T02:00:00+00:00") + dt.timedelta(days=i)
    testid = f"night-{t.date().isoformat()}-n{i:02d}"  # a test's own ids (the launcher core makes real ones)
    return {"run_key": f"hs-{testid}", "testid": testid, "started_at": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "target": "tidb", "product": "TiDB", "version": version, "git_hash": "e4e814fdc0af",
            "fingerprint": "fp1", "host": "bench1", "source_file": f"results/{testid}.json",
            "source_sha256": f"{i:064x}", "ingested_at": "2026-11-26T07:00:00Z"}


def point_row(run, workload, threads, qps, p95):
    return {"run_key": run["run_key"], "series": f"{run['target']}/{workload}/{threads}/o1",
            "workload": workload, "threads": threads, "options_hash": "o1", "target": run["target"],
            "qps": qps, "tps": qps / 20, "p95_ms": p95, "p99_ms": p95 * 1.5, "errors_per_s": 0.0,
            "client_cpu_per_query": 1e-5, "server_cpu_per_query": 4e-5}


# ---------------------------------------------------------------------------------------------
# the History dashboard's queries as Grafana's PostgreSQL data source sends them
# ---------------------------------------------------------------------------------------------

FROM, TO = "2026-10-20T00:00:00Z", "2026-11-25T00:00:00Z"  # the synthetic runs' dashboard range


def quote(values):
    """A multi-value variable as Grafana's SQL data sources interpolate it: quoted, comma-joined."""
    return ",".join("'" + str(v).replace("'", "''") + "'" for v in values)


def grafana_sql(sql, values, time_from=FROM, time_to=TO):
    """The SQL Grafana's PostgreSQL data source sends: its macros expanded, then the variables."""
    sql = re.sub(r"\$__timeFilter\(([^)]+)\)", lambda m: f"{m.group(1)} BETWEEN '{time_from}' AND '{time_to}'", sql)
    sql = re.sub(r"\$__time\(([^)]+)\)", lambda m: f'{m.group(1)} AS "time"', sql)
    assert "$__" not in sql, sql
    return dashtools.substitute(sql, values)


def run(db, sql):
    with connect("tbs_history_reader", db) as c:
        cur = c.execute(sql)
        cols = [d.name for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


def resolve_variables(dash, db, chosen=None, time_from=FROM, time_to=TO):
    """Each variable's options from its own query, in order, as Grafana refreshes them; a chosen
    value, else All (every option: the variables set no allValue)."""
    values, options = {}, {}
    for v in dash["templating"]["list"]:
        rows = run(db, grafana_sql(v["query"], values, time_from, time_to))
        options[v["name"]] = [str(next(iter(r.values()))) for r in rows]
        pick = (chosen or {}).get(v["name"], options[v["name"]])
        values[v["name"]] = quote(pick)
    return values, options
