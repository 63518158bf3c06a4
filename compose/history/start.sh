#!/bin/sh
# history-db's entrypoint (compose/history.yaml), as the image's postgres user: the PostgreSQL
# binaries only (initdb, pg_ctl, psql, postgres), no image-specific entrypoint.
#  1. the first time: the cluster in $PGDATA, superuser `postgres` with the generated password
#     (compose/passwords.py), password logins over TCP (scram-sha-256) from the compose network;
#  2. every start: compose/history/roles.sql (database tbs_history, its writer and read-only
#     reader, their passwords) through a server on a private socket only, so nothing reaches
#     the store before its users are right;
#  3. postgres on every interface of the container (compose publishes it on 127.0.0.1 only).
set -eu
# (the tests run this very script outside a container: TBS_HISTORY_SECRETS, TBS_HISTORY_ROLES)
S=${TBS_HISTORY_SECRETS:-/run/secrets/tbs}
ROLES=${TBS_HISTORY_ROLES:-/opt/tbs/history/roles.sql}
: "${PGDATA:?PGDATA is not set}"
if [ ! -s "$S/admin_password" ] || [ ! -s "$S/passwords.sql" ]; then
  echo "history-db: $S/admin_password or passwords.sql is missing (the secrets service makes them)" >&2
  exit 1
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  chmod 700 "$PGDATA"
  initdb -D "$PGDATA" -U postgres --pwfile="$S/admin_password" --auth-local=peer --auth-host=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8
  # initdb allows 127.0.0.1 and ::1: add the compose network's addresses (passwords only)
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
fi
sock=$(mktemp -d)
pg_ctl -D "$PGDATA" -w -s -o "-c listen_addresses= -c unix_socket_directories=$sock" start
{ printf '\\set dbname tbs_history\n'; cat "$S/passwords.sql" "$ROLES"; } \
  | psql -X -q -h "$sock" -U postgres -d postgres -v ON_ERROR_STOP=1 -f -
pg_ctl -D "$PGDATA" -w -s stop
rmdir "$sock"
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp -c max_connections=50
