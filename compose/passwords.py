"""The compose stack's generated passwords: nothing to type, nothing secret in a tracked file.

compose/secrets.yaml runs this script as the one-shot service `secrets` on every `docker compose
up`, before TiDB, Grafana and the history store start. The first time, it makes the random passwords, each in the
volume of the one service that reads it (so no container sees another's secret):

  grafana-secret:/grafana_admin_password  Grafana's admin (GF_SECURITY_ADMIN_PASSWORD__FILE)
  tidb-secret:/root_password              TiDB's root
  tidb-secret:/init.sql                   what TiDB runs once, when it creates the cluster: the
                                          CLUSTER_CONFIG set's init.sql, root's password, the
                                          benchmark user sbtest and its database
  k6-secret:/sbtest_password              the benchmark user's (k6 reads it: mysql_password_file)
  history-db-secret:/admin_password       the history store's PostgreSQL superuser (compose/history.yaml)
  history-writer-secret:/writer_password  the history store's writer (scripts/history push) ...
  history-writer-secret:/conninfo         ... and its libpq connection string (the nightly one-shot)
  grafana-secret:/history_reader_password the store's read-only reader: Grafana's History data source
                                          (GF_TBS_HISTORY_DB_PASSWORD__FILE)
  history-db-secret:/passwords.sql        the writer's and the reader's, as psql variables (set lines) for
                                          compose/history/roles.sql (compose/history/start.sh)

Later runs keep the passwords (init.sql is written again: CLUSTER_CONFIG may have changed).
`docker compose down -v` removes the volumes, and the next `up` makes new passwords for the new
cluster. Passwords never appear in an argument, an environment variable or a log line.

    python3 passwords.py ensure    # what the service runs
    python3 passwords.py login     # prints the logins: docker compose run --rm --no-deps secrets login
    python3 passwords.py password sbtest   # one password alone (scripts/compose-k6)
Python's standard library only (the stack's PYTHON_IMAGE).
"""
import os
import secrets
import sys

OUT = os.environ.get("TBS_SECRETS_DIR", "/secrets")
CONFIG = os.environ.get("TBS_CONFIG_DIR", "/opt/tbs/config")
GRAFANA_UID = 472  # the user Grafana's image runs as (group 0)
POSTGRES_UID = 999  # the postgres user of the PostgreSQL image (history-db runs as it)

FILES = {
    # name: (folder under OUT, file, owner uid)
    "grafana": ("grafana", "grafana_admin_password", GRAFANA_UID),
    "tidb-root": ("tidb", "root_password", 0),
    "sbtest": ("k6", "sbtest_password", 0),
    "history-admin": ("history-db", "admin_password", POSTGRES_UID),
    "history-writer": ("history-writer", "writer_password", 0),
    "history-reader": ("grafana", "history_reader_password", GRAFANA_UID),
}


def path(name):
    folder, file, _ = FILES[name]
    return os.path.join(OUT, folder, file)


def write(p, text, uid=0, mode=0o440):
    tmp = p + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chown(tmp, uid, 0)
    os.chmod(tmp, mode)
    os.replace(tmp, p)


def ensure():
    made = []
    for name, (folder, _, uid) in FILES.items():
        p = path(name)
        if not os.path.isdir(os.path.join(OUT, folder)):
            sys.exit(f"secrets: {os.path.join(OUT, folder)} is not mounted (compose/secrets.yaml mounts one volume per reader)")
        if not os.path.exists(p) or not open(p).read().strip():
            # URL-safe letters, digits, - and _: nothing to quote in SQL, a DSN or a URL
            write(p, secrets.token_urlsafe(24), uid)
            made.append(name)
    config_set = os.environ.get("CLUSTER_CONFIG", "default")
    init = os.path.join(CONFIG, config_set, "init.sql")
    if not os.path.isfile(init):
        sys.exit(f"secrets: {init} not found (CLUSTER_CONFIG={config_set!r}; env-check names the valid sets)")
    root, sbtest = (open(path(n)).read().strip() for n in ("tidb-root", "sbtest"))
    sql = open(init).read().rstrip() + f"""

-- Added by compose/passwords.py: the generated passwords (TiDB runs this file once, when it
-- creates the cluster). The benchmark user owns every database named sbtest*.
ALTER USER 'root'@'%' IDENTIFIED BY '{root}';
CREATE DATABASE IF NOT EXISTS sbtest;
CREATE DATABASE IF NOT EXISTS sbtest_smoke;  -- scripts/compose-smoke's, apart from your tables
CREATE DATABASE IF NOT EXISTS sbtest_tpcc;  -- k6/tpcc.js's (docs/tpcc.md), apart from the sysbench tables
CREATE USER IF NOT EXISTS 'sbtest'@'%' IDENTIFIED BY '{sbtest}';
GRANT ALL PRIVILEGES ON `sbtest%`.* TO 'sbtest'@'%';
"""
    write(os.path.join(OUT, "tidb", "init.sql"), sql, 0, 0o400)
    # the history store: what compose/history/start.sh gives roles.sql, the writer's connection
    writer, reader = (open(path(n)).read().strip() for n in ("history-writer", "history-reader"))
    write(os.path.join(OUT, "history-db", "passwords.sql"),
          f"\\set writer_password '{writer}'\n\\set reader_password '{reader}'\n", POSTGRES_UID, 0o400)
    write(os.path.join(OUT, "history-writer", "conninfo"),
          f"host=history-db port=5432 dbname=tbs_history user=tbs_history_writer password={writer}\n", 0, 0o400)
    print("secrets: " + (f"made passwords for {', '.join(made)}" if made else "passwords kept")
          + f"; TiDB's init.sql written from compose/config/{config_set}/init.sql")
    print("secrets: the logins: docker compose run --rm --no-deps secrets login")


def login():
    for name in FILES:
        if not os.path.exists(path(name)):
            sys.exit("secrets: no passwords yet: run `docker compose up -d` first")
    read = {n: open(path(n)).read().strip() for n in FILES}
    user = os.environ.get("GRAFANA_ADMIN_USER", "admin")
    print(f"Grafana  http://127.0.0.1:3000   user {user}   password {read['grafana']}")
    print(f"TiDB     127.0.0.1:4000          user root    password {read['tidb-root']}")
    print(f"TiDB     127.0.0.1:4000          user sbtest  password {read['sbtest']}   (what k6 uses)")
    print(f"History  127.0.0.1:5432          user tbs_history_writer  password {read['history-writer']}"
          "   (PostgreSQL, database tbs_history: scripts/history push)")
    print(f"History  127.0.0.1:5432          user tbs_history_reader  password {read['history-reader']}"
          "   (read-only: Grafana, Apache Otava)")


def password(name):
    """One password alone on stdout, for a script that keeps it in a private file (scripts/compose-k6)."""
    if name not in FILES:
        sys.exit(f"secrets: unknown password {name!r} (valid: {', '.join(FILES)})")
    if not os.path.exists(path(name)):
        sys.exit("secrets: no passwords yet: run `docker compose up -d` first")
    print(open(path(name)).read().strip())


def main(argv):
    usage = "usage: passwords.py ensure | login | password NAME"
    if argv == ["ensure"]:
        ensure()
    elif argv == ["login"]:
        login()
    elif len(argv) == 2 and argv[0] == "password":
        password(argv[1])
    else:
        sys.exit(f"{usage} (got: {' '.join(argv) or 'nothing'})")


if __name__ == "__main__":
    main(sys.argv[1:])
