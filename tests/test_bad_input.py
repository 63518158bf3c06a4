"""Bad input stops early, with a message that names the bad value and the valid ones, and a
non-zero exit; the password never appears."""
import time

import pytest

from conftest import fresh_db, k6, password, sql


def run_bad(*args):
    t0 = time.time()
    p = k6("run", *args, "oltp.js", check=False, timeout=60)
    return p, p.stdout + p.stderr, time.time() - t0


def test_refused_port_names_host_port_user_not_password(stack):
    p, out, secs = run_bad("-e", "mysql_port=4999")
    assert p.returncode != 0
    assert "cannot connect to MySQL at 127.0.0.1:4999 as user 'sbtest'" in out
    assert password() not in out
    assert secs < 10


def test_wrong_password_is_refused_without_echoing_it(stack):
    p, out, _ = run_bad("-e", "mysql_password=not-the-secret-xyz")
    assert p.returncode != 0
    assert "Access denied" in out and "127.0.0.1:4000 as user 'sbtest'" in out
    assert "not-the-secret-xyz" not in out


@pytest.mark.parametrize("args,message", [
    (["-e", "workload=oltp_foo"], "invalid option workload=oltp_foo: unknown workload (valid: oltp_point_select, oltp_read_only"),
    (["-e", "threads=150,,x"], "invalid option threads=150,,x: must be a thread count >= 1, or a comma-separated list"),
    (["-e", "tabels=3"], "unknown option 'tabels' (did you mean 'tables'?)"),
    (["-e", "rand_type=foo"], "unknown distribution (valid: uniform, gaussian, special, pareto, zipfian)"),
    (["-e", "table_size=-5"], "invalid option table_size=-5: must be a whole number >= 0"),
    (["-e", "tables=0"], "invalid option tables=0: must be a whole number >= 1"),
])
def test_bad_options_stop_before_any_query(stack, args, message):
    p, out, _ = run_bad(*args)
    assert p.returncode != 0
    assert message in out
    assert "testid=" not in out  # setup (the first query) never ran


def test_missing_table_says_run_prepare(stack):
    db = fresh_db("tidb", "sbtest_bad_missing")
    p, out, _ = run_bad("-e", f"mysql_db={db}", "-e", "tables=3")
    assert p.returncode != 0
    assert f"table sbtest1 does not exist in database '{db}'" in out
    assert "run prepare first" in out


def test_prepare_refuses_existing_tables_and_changes_nothing(stack):
    db = fresh_db("tidb", "sbtest_bad_exists")
    common = ["-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=100"]
    k6("run", *common, "prepare.js")
    sql("tidb", "DELETE FROM sbtest1 WHERE id <= 10", db)
    p = k6("run", *common, "prepare.js", check=False)
    assert p.returncode != 0
    assert "table sbtest1 already exists" in p.stdout + p.stderr and "nothing was changed" in p.stdout + p.stderr
    assert sql("tidb", "SELECT COUNT(*) FROM sbtest1", db)[0][0] == 90
    k6("run", *common, "-e", "recreate=true", "prepare.js")
    assert sql("tidb", "SELECT COUNT(*) FROM sbtest1", db)[0][0] == 100
