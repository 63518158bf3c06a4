"""The run history's tables, in one place (issue #29): the embedded index results/history.sqlite
and the team store (PostgreSQL, tidbbench/history/pg.py) are both made from TABLES.

SQLite keeps the agreed column types as they are (TEXT times in ISO-8601 UTC); PostgreSQL gets
proper ones (TIMESTAMPTZ for the times, DOUBLE PRECISION for the figures), foreign keys from the
points and the change points to their runs, and the indexes the History dashboard reads by.

    sqlite_ddl()   CREATE TABLE IF NOT EXISTS ... for SQLite (what the core ingest can run)
    pg_ddl()       the same tables for PostgreSQL, with indexes and foreign keys
    columns(t)     the column names of table t, in order
Standard library only.
"""

# k6/tpcc.js's transaction types (go-tpc's names, its manifest's tpcc.txns), each with its p95 and
# p99 as a column of points (docs/history.md: a TPC-C series' figures)
TPCC_TXNS = ("new_order", "payment", "order_status", "delivery", "stock_level")
TPCC_COLUMNS = [("tpmc", "REAL", "DOUBLE PRECISION"), ("tpm_total", "REAL", "DOUBLE PRECISION")] + [
    (f"{t}_{q}_ms", "REAL", "DOUBLE PRECISION") for t in TPCC_TXNS for q in ("p95", "p99")]

# (name, SQLite type, PostgreSQL type) per column; the primary key of each table; foreign keys
# (PostgreSQL only: the store refuses points or change points of a run it does not hold).
TABLES = {
    "runs": {
        "columns": [
            ("run_key", "TEXT", "TEXT"),
            ("testid", "TEXT", "TEXT"),
            ("started_at", "TEXT", "TIMESTAMPTZ"),
            ("target", "TEXT", "TEXT"),
            ("product", "TEXT", "TEXT"),
            ("version", "TEXT", "TEXT"),
            ("git_hash", "TEXT", "TEXT"),
            ("fingerprint", "TEXT", "TEXT"),
            ("host", "TEXT", "TEXT"),
            ("source_file", "TEXT", "TEXT"),
            ("source_sha256", "TEXT", "TEXT"),
            ("ingested_at", "TEXT", "TIMESTAMPTZ"),
        ],
        "primary_key": ["run_key"],
        "foreign_keys": [],
        "indexes": [["started_at"], ["testid"]],
    },
    "points": {
        "columns": [
            ("run_key", "TEXT", "TEXT"),
            ("series", "TEXT", "TEXT"),
            ("workload", "TEXT", "TEXT"),
            ("threads", "INTEGER", "INTEGER"),
            ("options_hash", "TEXT", "TEXT"),
            ("target", "TEXT", "TEXT"),
            ("qps", "REAL", "DOUBLE PRECISION"),
            ("tps", "REAL", "DOUBLE PRECISION"),
            ("p95_ms", "REAL", "DOUBLE PRECISION"),
            ("p99_ms", "REAL", "DOUBLE PRECISION"),
            ("errors_per_s", "REAL", "DOUBLE PRECISION"),
            ("client_cpu_per_query", "REAL", "DOUBLE PRECISION"),
            ("server_cpu_per_query", "REAL", "DOUBLE PRECISION"),
            # TPC-C runs (k6/tpcc.js): tpmC, tpmTotal, each transaction type's p95 and p99 (NULL for OLTP)
            *TPCC_COLUMNS,
            # a plan's sample paired with its round's reference sample (a plan's "reference" arm,
            # docs/history.md#a-reference-beside-every-run): that run, and this step's throughput
            # (QPS; TPC-C: tpmC) over the reference's at the same thread step (NULL: not paired)
            ("ref_run_key", "TEXT", "TEXT"),
            ("vs_ref", "REAL", "DOUBLE PRECISION"),
        ],
        "primary_key": ["run_key", "series"],
        "foreign_keys": [(["run_key"], "runs", ["run_key"])],
        "indexes": [["series"], ["workload", "threads"]],
    },
    "change_points": {
        "columns": [
            ("series", "TEXT", "TEXT"),
            ("metric", "TEXT", "TEXT"),
            ("run_key_before", "TEXT", "TEXT"),
            ("run_key_after", "TEXT", "TEXT"),
            ("at", "TEXT", "TIMESTAMPTZ"),
            ("mean_before", "REAL", "DOUBLE PRECISION"),
            ("mean_after", "REAL", "DOUBLE PRECISION"),
            ("magnitude_pct", "REAL", "DOUBLE PRECISION"),
            ("ci_low_pct", "REAL", "DOUBLE PRECISION"),
            ("ci_high_pct", "REAL", "DOUBLE PRECISION"),
            ("pvalue", "REAL", "DOUBLE PRECISION"),
            ("direction", "TEXT", "TEXT"),
            ("evidence", "TEXT", "TEXT"),
        ],
        "primary_key": ["series", "metric", "run_key_after"],
        "foreign_keys": [(["run_key_before"], "runs", ["run_key"]),
                         (["run_key_after"], "runs", ["run_key"])],
        "indexes": [["at"]],
        "checks": ["direction IN ('regression', 'improvement')"],
    },
}

# the order rows go in (runs before what refers to them) and out
ORDER = ["runs", "points", "change_points"]


def columns(table):
    return [c[0] for c in TABLES[table]["columns"]]


def pg_type(table, column):
    return next(c[2] for c in TABLES[table]["columns"] if c[0] == column)


def grown_columns(table, have):
    """(name, SQLite type, PostgreSQL type) of table's columns that a table of columns `have`
    (made before they were added: the tables only ever grow at the end) lacks, in order."""
    return [c for c in TABLES[table]["columns"] if c[0] not in have]


def sqlite_ddl():
    """CREATE TABLE IF NOT EXISTS statements for SQLite, with the agreed names and types."""
    out = []
    for name in ORDER:
        t = TABLES[name]
        cols = [f"{c} {st}" for c, st, _ in t["columns"]]
        cols.append(f"PRIMARY KEY({', '.join(t['primary_key'])})")
        out.append(f"CREATE TABLE IF NOT EXISTS {name} (\n  " + ",\n  ".join(cols) + "\n);")
    return "\n".join(out) + "\n"


def pg_ddl():
    """CREATE TABLE / INDEX IF NOT EXISTS statements for PostgreSQL (one string, run as is)."""
    out = []
    for name in ORDER:
        t = TABLES[name]
        cols = [f"{c} {pt}" + (" NOT NULL" if c in t["primary_key"] else "") for c, _, pt in t["columns"]]
        cols.append(f"PRIMARY KEY ({', '.join(t['primary_key'])})")
        for src, ref, dst in t["foreign_keys"]:
            cols.append(f"FOREIGN KEY ({', '.join(src)}) REFERENCES {ref} ({', '.join(dst)}) ON DELETE CASCADE")
        for check in t.get("checks", []):
            cols.append(f"CHECK ({check})")
        out.append(f"CREATE TABLE IF NOT EXISTS {name} (\n  " + ",\n  ".join(cols) + "\n);")
        # a store made before a column was added gets it (IF NOT EXISTS: nothing for a new one)
        for c, _, pt in t["columns"]:
            if c not in t["primary_key"]:
                out.append(f"ALTER TABLE {name} ADD COLUMN IF NOT EXISTS {c} {pt};")
        for idx in t["indexes"]:
            out.append(f"CREATE INDEX IF NOT EXISTS {name}_{'_'.join(idx)}_idx ON {name} ({', '.join(idx)});")
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # print both, for a look
    print("-- SQLite\n" + sqlite_ddl() + "\n-- PostgreSQL\n" + pg_ddl())
