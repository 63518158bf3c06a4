"""The tools that measure tidb-bench-stack itself (not part of the product): tools/bench
(tbstools.bench, docs/bench.md), tools/faults (tbstools.faults, docs/faults.md) and tools/aa-rate
(tbstools.aarate, docs/report.md: the report's measured false-positive rate)."""
