"""Sweeps and plans: several workloads x thread steps, arms interleaved (scripts/sweep, tbs-sweep)."""
