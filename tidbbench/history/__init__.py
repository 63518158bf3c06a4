"""The run history (scripts/history, tbs-history; docs/history.md): the embedded index of every
run (store), its change points found by Apache Otava (cp), their evidence (evidence), the
team's PostgreSQL store (pg, schema), and what a series' noise lets the detection see (noise)."""
