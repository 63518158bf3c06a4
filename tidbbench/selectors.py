"""The one selector config: the label matchers of every query our dashboards make
(tidbbench.dash) and of the report's resource queries (tidbbench.report.prom: the target's
processes, `db_tidb` and `db_mysql`). Both import it from here; k8s/prometheus/
tidb-operator-scrape.yml names its scrape jobs after it. Data only, standard library: compose's
plain Python image imports it (tidbbench.dash.pingcap)."""

SEL = {
    # k6 series of the chosen run (benchmark dashboard: one testid; filters are multi-value).
    "run": 'testid="$testid", workload=~"$workload", version=~"$version", threads=~"$threads"',
    # ... restricted to the measured windows (warm-up excluded).
    "measured": 'testid="$testid", workload=~"$workload", version=~"$version", '
                'threads=~"$threads", warmup="false"',
    # k6 built-ins carry only testid (and scenario).
    "k6": 'testid="$testid"',
    # Markers: annotations on every dashboard accept one or several testids.
    "marker": 'testid=~"$testid"',
    # The two runs of the comparison dashboard.
    "run_a": 'testid="$run_a", warmup="false"',
    "run_b": 'testid="$run_b", warmup="false"',
    "marker_a": 'testid="$run_a"',
    "marker_b": 'testid="$run_b"',
    # Targets scraped by Prometheus (job names from prometheus/prometheus.yml).
    "tidb": 'job="tidb", instance=~"$tidb_instance"',
    "tikv": 'job="tikv", instance=~"$tikv_instance"',
    "pd": 'job="pd"',
    "mysql": 'job="mysqld", instance=~"$mysql_instance"',
    "node": 'job="node", instance=~"$host"',
    # every host of the node job (dashboards without a host variable)
    "nodes": 'job="node"',
    # Loki streams carry a `service` label (tidb, tikv, pd, k6, ...).
    "logs": 'service=~"$service"',
    # The target's processes, for its resource use: TiDB, TiKV and PD export their own process
    # metrics; MySQL/MariaDB's come from process-exporter (job "process", one group per name).
    "db_tidb": 'job=~"tidb|tikv|pd"',
    "db_mysql": 'job="process", groupname=~"mariadbd|mysqld"',
    # Which of the two a run measured, from its version label: TiDB's release starts with "v"
    # (v8.5.6; the local build's v8.5-e4e814fdc0af+go-module-proxy), MySQL's and MariaDB's with a
    # digit (10.11.14-MariaDB).
    "version_tidb": 'version=~"v.*"',
    "version_mysql": 'version!~"v.*"',
}
