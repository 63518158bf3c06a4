"""tidb-bench-stack's Grafana dashboards in Python (standard library only): our dashboards as code
(generate: base, steps, run, databases, hosts) and PingCAP's dashboards prepared for this stack
(pingcap). The commands are tidbbench/dash/generate.py and tidbbench/dash/pingcap.py; compose runs pingcap.py in
a plain Python container with grafana/ and contract/ mounted, so nothing here needs more."""
