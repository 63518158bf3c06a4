-- The history store's database and users (docs/history-store.md), the one definition both modes
-- run as the PostgreSQL superuser through psql: the local stack (scripts/stack's
-- start_history_db) and compose (compose/history/initdb.sh, once, when the data dir is created).
-- The caller sets the psql variables dbname (tbs_history; the tests use a database of their own),
-- writer_password and reader_password first (`\set`, never an argument). Running it again is
-- harmless: it only makes sure of what it states.
--
--   tbs_history_writer  owns the database (tbs_history) and its tables: `scripts/history
--                       push` creates the schema when missing and upserts into it
--   tbs_history_reader  Grafana's data source (and Apache Otava): CONNECT and SELECT only, every
--                       transaction read-only
\set ON_ERROR_STOP on
SELECT 'CREATE ROLE tbs_history_writer LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tbs_history_writer')\gexec
SELECT 'CREATE ROLE tbs_history_reader LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tbs_history_reader')\gexec
ALTER ROLE tbs_history_writer WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE CONNECTION LIMIT 10 PASSWORD :'writer_password';
ALTER ROLE tbs_history_reader WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE CONNECTION LIMIT 20 PASSWORD :'reader_password';
ALTER ROLE tbs_history_reader SET default_transaction_read_only = on;
SELECT format('CREATE DATABASE %I OWNER tbs_history_writer', :'dbname') WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'dbname')\gexec
REVOKE ALL ON DATABASE :"dbname" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"dbname" TO tbs_history_reader;
\connect :"dbname"
-- PostgreSQL 15: the schema public belongs to the database's owner (the writer) and PUBLIC may
-- not create in it; the reader may look up names and read every table the writer makes
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO tbs_history_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE tbs_history_writer IN SCHEMA public GRANT SELECT ON TABLES TO tbs_history_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO tbs_history_reader;
