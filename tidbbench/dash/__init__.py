"""tidb-bench-stack's Grafana dashboards in Python (standard library only): our dashboards as code
(generate: base, steps, run, databases, hosts) and PingCAP's dashboards prepared for this stack
(pingcap). The commands are `python3 -m tidbbench.dash.generate` and `python3 -m
tidbbench.dash.pingcap`; compose runs the latter in a plain Python container with tidbbench/ and
contract/ mounted, so nothing here (nor tidbbench/__init__.py, tidbbench/selectors.py) needs more."""
