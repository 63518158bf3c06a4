"""The tools that measure tidb-bench-stack itself (not part of the product): tools/bench
(tbstools.bench, docs/bench.md) and tools/faults (tbstools.faults, docs/faults.md)."""
