"""Issue #29: the team's history store. `push` (tidbbench/history/pg.py) against the REAL
PostgreSQL the local stack starts (service history_db), in a database of the test's own made
with the real compose/history/roles.sql; the index is an SQLite file made here with the one
table spec and synthetic runs."""
import datetime as dt
import os
import re
import sqlite3
import subprocess
from pathlib import Path

import psycopg
import pytest

import storetools as ht
from conftest import ROOT, STATE
from tidbbench import ReportError
from tidbbench.history import pg as historypg, schema as historyschema

pytestmark = pytest.mark.full


@pytest.fixture(scope="module")
def store(request):
    """The stack's history_db: already up (scripts/test's stack), or started by the stack fixture."""
    if not ht.up():
        request.getfixturevalue("stack")
    assert ht.up(), f"the local stack's history_db does not answer on 127.0.0.1:{ht.port()}"


@pytest.fixture
def own_db(store, tmp_path):
    with ht.own_database(tmp_path) as (name, conninfo):
        yield name, conninfo


def series_index(tmp_path, n=6, name="history.sqlite"):
    runs = [ht.run_row(i) for i in range(n)]
    points = [ht.point_row(r, w, t, 1000.0 * t + i, 2.0 + i / 10) for i, r in enumerate(runs)
              for w, t in (("oltp_point_select", 8), ("oltp_read_write", 16))]
    cps = [{"series": points[6]["series"], "metric": "qps", "run_key_before": runs[2]["run_key"],
            "run_key_after": runs[3]["run_key"], "at": runs[3]["started_at"], "mean_before": 8001.0,
            "mean_after": 8004.0, "magnitude_pct": -3.1, "ci_low_pct": -4.0, "ci_high_pct": -2.2,
            "pvalue": 0.001, "direction": "regression", "evidence": "QPS -3.1% (95% CI -4.0..-2.2), p=0.001"}]
    return ht.make_index(tmp_path / name, runs, points, cps), runs, points, cps


def counts(name):
    with ht.connect("tbs_history_reader", name) as c:
        return {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in historyschema.ORDER}


def test_push_creates_the_schema_and_mirrors_the_index(own_db, tmp_path):
    name, conninfo = own_db
    idx, runs, points, cps = series_index(tmp_path)
    n = historypg.push(idx, conninfo)
    assert n == len(runs) + len(points) + len(cps) == 6 + 12 + 1
    assert counts(name) == {"runs": 6, "points": 12, "change_points": 1}
    with ht.connect("tbs_history_reader", name) as c:
        # proper types: the ISO text times are TIMESTAMPTZ, the figures double precision
        types = dict(c.execute("SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
                               "WHERE table_schema = 'public'").fetchall())
        assert types["runs.started_at"] == types["change_points.at"] == "timestamp with time zone"
        assert types["points.qps"] == "double precision" and types["points.threads"] == "integer"
        started, version = c.execute("SELECT started_at, version FROM runs WHERE run_key = %s",
                                     (runs[3]["run_key"],)).fetchone()
        assert started == dt.datetime(2026, 11, 4, 2, 0, tzinfo=dt.timezone.utc) and version == "v8.5.6"
        qps, p95 = c.execute("SELECT qps, p95_ms FROM points WHERE run_key = %s AND workload = 'oltp_read_write'",
                             (runs[5]["run_key"],)).fetchone()
        assert (qps, p95) == (16005.0, 2.5)
        ev, at = c.execute("SELECT evidence, at FROM change_points").fetchone()
        assert ev.startswith("QPS -3.1%") and at == started


def test_a_store_made_before_the_tpcc_columns_gets_them_at_push(own_db, tmp_path):
    """A store whose points table predates TPC-C's columns (schema.py's tables only grow at the
    end): push adds them (ADD COLUMN IF NOT EXISTS), keeps its rows and mirrors the TPC-C figures."""
    name, conninfo = own_db
    tpcc = [c for c, _, _ in historyschema.TPCC_COLUMNS]
    later = tpcc + ["ref_run_key", "vs_ref"]  # TPC-C's, then the reference pairing's (tests/test_duet.py)
    old_ddl = "\n".join(line for line in historyschema.pg_ddl().splitlines()
                        if not any(f" {c} " in line or f"COLUMN IF NOT EXISTS {c} " in line for c in later))
    with ht.connect("tbs_history_writer", name) as c:
        c.execute(old_ddl)
        have = [r[0] for r in c.execute("SELECT column_name FROM information_schema.columns WHERE table_name = "
                                        "'points' ORDER BY ordinal_position")]
    assert not set(later) & set(have) and have == historyschema.columns("points")[:len(have)]
    idx, runs, points, cps = series_index(tmp_path)
    with sqlite3.connect(idx) as db:
        db.execute("UPDATE points SET tpmc = 1234.5, new_order_p95_ms = 12.5 WHERE run_key = ?", (runs[0]["run_key"],))
    assert historypg.push(idx, conninfo) == len(runs) + len(points) + len(cps)
    with ht.connect("tbs_history_reader", name) as c:
        cols = [r[0] for r in c.execute("SELECT column_name FROM information_schema.columns WHERE table_name = "
                                        "'points' ORDER BY ordinal_position")]
        assert cols == historyschema.columns("points")
        got = c.execute("SELECT tpmc, new_order_p95_ms FROM points WHERE run_key = %s", (runs[0]["run_key"],)).fetchall()
    assert got == [(1234.5, 12.5), (1234.5, 12.5)]
    assert counts(name) == {"runs": 6, "points": 12, "change_points": 1}


def test_push_again_changes_nothing_and_updates_in_place(own_db, tmp_path):
    name, conninfo = own_db
    idx, runs, points, cps = series_index(tmp_path)
    historypg.push(idx, conninfo)
    before = counts(name)
    assert historypg.push(idx, conninfo) == 19
    assert counts(name) == before
    # a re-ingested run (a corrected figure) replaces its row, keyed by the primary key
    points[0]["qps"] = 7777.0
    ht.make_index(idx, runs, points, cps)
    historypg.push(idx, conninfo)
    with ht.connect("tbs_history_reader", name) as c:
        assert c.execute("SELECT qps FROM points WHERE run_key = %s AND series = %s",
                         (points[0]["run_key"], points[0]["series"])).fetchone()[0] == 7777.0
    assert counts(name) == before


def test_change_points_of_the_files_series_follow_the_file(own_db, tmp_path):
    """A change point a later detection no longer finds leaves the store; a series the file does
    not hold (another host's) keeps its change points."""
    name, conninfo = own_db
    idx, runs, points, cps = series_index(tmp_path)
    other_run = ht.run_row(40)
    other_run["target"] = "mariadb"
    other_point = ht.point_row(other_run, "oltp_insert", 4, 500.0, 9.0)
    other_cp = {**cps[0], "series": other_point["series"], "run_key_before": other_run["run_key"],
                "run_key_after": other_run["run_key"]}
    other = ht.make_index(tmp_path / "other.sqlite", [other_run], [other_point], [other_cp])
    historypg.push(idx, conninfo)
    historypg.push(other, conninfo)
    assert counts(name)["change_points"] == 2
    ht.make_index(tmp_path / "redetected.sqlite", runs, points, [])
    historypg.push(tmp_path / "redetected.sqlite", conninfo)
    with ht.connect("tbs_history_reader", name) as c:
        assert c.execute("SELECT series FROM change_points").fetchall() == [(other_point["series"],)]
    assert counts(name)["runs"] == 7  # runs and points only ever add up


@pytest.mark.parametrize("bad,expect", [
    ({"table": "runs", "row": 4, "column": "started_at", "value": "yesterday-ish"}, "InvalidDatetimeFormat"),
    ({"table": "change_points", "row": 0, "column": "direction", "value": "sideways"}, "CheckViolation"),
    ({"table": "points", "row": -1, "column": "run_key", "value": "no-such-run"}, "ForeignKeyViolation"),
])
def test_a_bad_row_writes_nothing(own_db, tmp_path, bad, expect):
    """One transaction: a row the store refuses (its last rows included) leaves the store as it was."""
    name, conninfo = own_db
    idx, runs, points, cps = series_index(tmp_path)
    historypg.push(idx, conninfo)
    before = counts(name)
    runs2 = [ht.run_row(i) for i in range(6, 9)]
    points2 = [ht.point_row(r, "oltp_point_select", 8, 9000.0, 3.0) for r in runs2]
    tables = {"runs": runs + runs2, "points": points + points2, "change_points": cps}
    tables[bad["table"]][bad["row"]][bad["column"]] = bad["value"]
    ht.make_index(tmp_path / "bad.sqlite", tables["runs"], tables["points"], tables["change_points"])
    with pytest.raises(ReportError) as e:
        historypg.push(tmp_path / "bad.sqlite", conninfo)
    assert "nothing was written" in str(e.value) and expect in str(e.value)
    assert counts(name) == before
    with ht.connect("tbs_history_reader", name) as c:
        assert c.execute("SELECT count(*) FROM runs WHERE run_key = %s", (runs2[0]["run_key"],)).fetchone()[0] == 0


def test_the_reader_only_reads(own_db, tmp_path):
    """Grafana's user: SELECT yes; INSERT, UPDATE, CREATE no (read-only transactions, no grant)."""
    name, conninfo = own_db
    idx, *_ = series_index(tmp_path)
    historypg.push(idx, conninfo)
    with ht.connect("tbs_history_reader", name) as c:
        assert c.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
    for sql, err in [("DELETE FROM runs", psycopg.errors.ReadOnlySqlTransaction),
                     ("CREATE TABLE x (a int)", psycopg.errors.ReadOnlySqlTransaction)]:
        with ht.connect("tbs_history_reader", name) as c, pytest.raises(err):
            c.execute(sql)
    # and without the read-only default, the grants alone refuse it
    with ht.connect("tbs_history_reader", name) as c:
        c.execute("SET transaction_read_only = off")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("DELETE FROM runs")
    # no one else may connect to the store's databases (CONNECT revoked from PUBLIC)
    with ht.connect("postgres", "postgres", autocommit=True) as c:
        granted = c.execute("SELECT has_database_privilege('public', %s, 'CONNECT')", (name,)).fetchone()[0]
    assert granted is False


def test_bad_input_is_named_and_the_password_never_shown(store, tmp_path):
    idx, *_ = series_index(tmp_path)
    # a connection file others may read, holding a password
    f = tmp_path / "open.conninfo"
    f.write_text(f"host=127.0.0.1 port={ht.port()} dbname=tbs_history user=tbs_history_writer password=s3cr3t-value\n")
    os.chmod(f, 0o644)
    with pytest.raises(ReportError, match=r"others may read it \(mode 644\): chmod 600"):
        historypg.push(idx, f)
    # a wrong password: the server's refusal, without the password
    os.chmod(f, 0o600)
    with pytest.raises(ReportError) as e:
        historypg.push(idx, f)
    assert "password authentication failed" in str(e.value) and "s3cr3t-value" not in str(e.value)
    with pytest.raises(ReportError, match="does not exist"):
        historypg.push(idx, tmp_path / "missing.conninfo")
    g = tmp_path / "garbage.conninfo"
    g.write_text("this is = not a = conninfo password=s3cr3t-value")
    g.chmod(0o600)
    with pytest.raises(ReportError) as e:
        historypg.push(idx, g)
    assert "not a libpq connection string" in str(e.value) and "s3cr3t-value" not in str(e.value)
    # an index without the agreed tables
    (tmp_path / "empty.sqlite").write_bytes(b"")
    with pytest.raises(ReportError, match=r"has no table runs \(valid: .*runs, points, change_points"):
        historypg.push(tmp_path / "empty.sqlite", f)


def test_the_command_line(own_db, tmp_path):
    """scripts/history push: one line, the rows written; non-zero with a clear error."""
    name, conninfo = own_db
    idx, *_ = series_index(tmp_path)
    env = {**os.environ, "TBS_STATE": str(STATE)}
    p = subprocess.run([str(ROOT / "scripts/history"), "push", "--index", str(idx), "--conninfo", str(conninfo)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert re.search(r"history store: 19 row\(s\) written from ", p.stdout)
    assert ht.secret("history-db-writer") not in p.stdout + p.stderr
    p = subprocess.run([str(ROOT / "scripts/history"), "push", "--index", str(tmp_path / "nope.sqlite"),
                        "--conninfo", str(conninfo)], capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "nope.sqlite does not exist" in p.stderr


def test_the_local_stack_made_the_writers_connection_file(store):
    f = STATE / "history-db.conninfo"
    assert oct(f.stat().st_mode & 0o777) == "0o600"
    text = f.read_text()
    assert f"port={ht.port()}" in text and "dbname=tbs_history" in text and "user=tbs_history_writer" in text
    with psycopg.connect(historypg.read_conninfo(f)) as c:
        assert c.execute("SELECT current_user, current_database()").fetchone() == ("tbs_history_writer", "tbs_history")
        # on 127.0.0.1 only
        assert c.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"


def test_composes_entrypoint_makes_the_same_store(tmp_path):
    """compose/history/start.sh, history-db's entrypoint, run as the image runs it: the postgres
    user, Debian's PostgreSQL binaries (the image's are the same packages), the files
    compose/passwords.py writes, listening on every interface, in a network namespace of its
    own (its loopback only, as a container's). Then the writer pushes and the reader reads, over
    TCP with the generated passwords; a restart keeps the data and runs roles.sql again."""
    import pwd
    import shutil
    import sys
    import tempfile
    for tool in ("unshare", "setpriv", "ip"):
        assert shutil.which(tool), f"{tool} is missing (util-linux, iproute2)"
    assert os.geteuid() == 0, "needs root: a network namespace of its own and the postgres user"
    pg = pwd.getpwnam("postgres")
    pg_bin = "/usr/lib/postgresql/15/bin"
    work = Path(tempfile.mkdtemp(prefix="tbs-history-compose-"))  # (pytest's tmp is closed to postgres)
    try:
        work.chmod(0o755)
        secrets = work / "secrets"
        for d in ("grafana", "tidb", "k6", "history-db", "history-writer"):
            (secrets / d).mkdir(parents=True)
        subprocess.run([sys.executable, str(ROOT / "compose/passwords.py"), "ensure"], check=True, capture_output=True,
                       env={**os.environ, "TBS_SECRETS_DIR": str(secrets), "TBS_CONFIG_DIR": str(ROOT / "compose/config")})
        for f in (secrets / "history-db").iterdir():  # the image's postgres is uid 999, this host's another
            os.chown(f, pg.pw_uid, pg.pw_gid)
        writer = (secrets / "history-writer/writer_password").read_text()
        reader = (secrets / "grafana/history_reader_password").read_text()
        conninfo = work / "writer.conninfo"
        conninfo.write_text((secrets / "history-writer/conninfo").read_text().replace("host=history-db", "host=127.0.0.1"))
        conninfo.chmod(0o600)
        idx, *_ = series_index(tmp_path)
        data = work / "data"
        data.mkdir()
        os.chown(data, pg.pw_uid, pg.pw_gid)
        script = f"""
set -e
ip link set lo up
start() {{
  setpriv --reuid=postgres --regid=postgres --init-groups env PATH={pg_bin}:/usr/bin:/bin PGDATA={data}/pgdata \\
    TBS_HISTORY_SECRETS={secrets}/history-db TBS_HISTORY_ROLES={ROOT}/compose/history/roles.sql \\
    sh {ROOT}/compose/history/start.sh >>{work}/pg.log 2>&1 &
  pid=$!
  for i in $(seq 100); do {pg_bin}/pg_isready -q -h 127.0.0.1 -d tbs_history && break; sleep 0.2; done
}}
start
{sys.executable} -c 'import sys; from tidbbench.history import pg as historypg; print("pushed", historypg.push(sys.argv[1], sys.argv[2]))' {idx} {conninfo}
kill -INT $pid; wait $pid || true
start
PGPASSWORD=$READER psql -X -A -t -h 127.0.0.1 -U tbs_history_reader -d tbs_history \\
  -c "SELECT 'runs', count(*) FROM runs" -c "SHOW default_transaction_read_only"
PGPASSWORD=$READER psql -X -h 127.0.0.1 -U tbs_history_reader -d tbs_history -c "DELETE FROM runs" 2>&1 || true
PGPASSWORD=wrong psql -X -h 127.0.0.1 -U tbs_history_writer -d tbs_history -c "SELECT 1" 2>&1 || true
ss -ltnH
kill -INT $pid; wait $pid || true
"""
        p = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True, text=True, timeout=180,
                           env={**os.environ, "READER": reader})
        log = (work / "pg.log").read_text() if (work / "pg.log").exists() else ""
        out = p.stdout + p.stderr
        assert p.returncode == 0, out + log
        assert "pushed 19" in out, out + log
        assert "runs|6" in out and "\non\n" in out, out  # the data survived the restart; the reader reads only
        assert "cannot execute DELETE in a read-only transaction" in out, out
        assert 'password authentication failed for user "tbs_history_writer"' in out, out
        assert re.search(r"0\.0\.0\.0:5432", out), out  # every interface of its (the container's) network
        assert writer not in out + log and reader not in out + log
    finally:
        subprocess.run(["rm", "-rf", str(work)])


def test_apache_otava_reads_the_store(own_db, tmp_path):
    """Otava (the release scripts/history pins) with deploy/otava/otava.yaml, as the read-only
    user, on a series pushed here that slides 3% after eight runs: it lists the runs with their
    testid and version and finds the change."""
    import importlib.util
    import sys
    if importlib.util.find_spec("otava") is None:
        pytest.skip("Apache Otava is not in this venv (tidbbench/requirements.txt pins it with "
                    "scripts/history): Otava's reading of the store is not checked (not counted)")
    name, conninfo = own_db
    runs = [ht.run_row(i, version="v8.5.6" if i < 8 else "v8.5.7") for i in range(16)]
    points = [ht.point_row(r, "oltp_point_select", 8, (8060.0 if i < 8 else 7820.0) + (i % 3) * 5, 1.2)
              for i, r in enumerate(runs)]
    historypg.push(ht.make_index(tmp_path / "h.sqlite", runs, points), conninfo)
    env = {**os.environ, "OTAVA_CONFIG": str(ROOT / "deploy/otava/otava.yaml"), "POSTGRES_HOSTNAME": "127.0.0.1",
           "POSTGRES_PORT": str(ht.port()), "POSTGRES_USERNAME": "tbs_history_reader",
           "POSTGRES_PASSWORD": ht.secret("history-db-reader"), "POSTGRES_DATABASE": name}
    p = subprocess.run([sys.executable, "-c", "import sys; from otava.main import main; "
                        "sys.argv = ['otava', 'analyze', 'point_select_8', '--branch', 'tidb']; main()"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert all(r["testid"] in p.stdout for r in runs) and "v8.5.7" in p.stdout
    assert re.search(r"-3\.0%", p.stdout), p.stdout


def test_the_core_index_has_the_tables_the_store_mirrors(tmp_path):
    """One table spec: the index scripts/history writes (tidbbench/history/store.py) has exactly the
    columns of tidbbench/history/schema.py, in order, so push mirrors every one of them."""
    import importlib.util
    import sqlite3
    if importlib.util.find_spec("tidbbench.history.store") is None:
        pytest.skip("tidbbench/history/store.py (scripts/history's index) is not in this tree: the two table "
                    "definitions are not compared (not counted)")
    from tidbbench.history import store as historystore
    db = tmp_path / "history.sqlite"
    historystore.connect(db, create=True).close()
    with sqlite3.connect(db) as c:
        for t in historyschema.ORDER:
            assert [r[1] for r in c.execute(f"PRAGMA table_info({t})")] == historyschema.columns(t), t
            pk = [r[1] for r in sorted(c.execute(f"PRAGMA table_info({t})"), key=lambda r: r[5]) if r[5]]
            assert pk == historyschema.TABLES[t]["primary_key"], t
