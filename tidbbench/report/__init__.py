"""The report: one run or A vs B, from results/<testid>.json and Prometheus (scripts/report, tbs-report)."""
