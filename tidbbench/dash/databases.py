"""2. TiDB cluster and 3. MySQL / MariaDB (mysqld_exporter)."""
from tidbbench.dash.base import (RI, dashboard, p95_p99, panel, query_var, row, matchers, sum_rate, targets, testid_var,
                                 zero_if_absent)


# ---------------------------------------------------------------------------------------------
# 2. TiDB cluster
# ---------------------------------------------------------------------------------------------
# The dashboard's panels, one function a row of it (declarative: each returns its row and panels).
TIDB, TIKV, PD = matchers("tidb"), matchers("tikv"), matchers("pd")


def tidb_query_quantile(q, extra=""):
    """The q-quantile of TiDB's query handling time, over the tidb-servers (and extra matchers)."""
    return (f"histogram_quantile({q}, sum by (le) (rate(tidb_server_handle_query_duration_seconds_bucket"
            f"{{{matchers('tidb', extra) if extra else TIDB}}}[{RI}])))")


def tidb_server_panels():
    """The TiDB row: tidb-server's statements, latency, connections and errors."""
    return [
        row("TiDB"),
        panel("stat", "TiDB up", "Whether Prometheus reaches each tidb-server's status port (1 = up).",
              "none", targets((f"up{{{TIDB}}}", "{{instance}}")), w=4, h=4,
              options={"colorMode": "value", "textMode": "value_and_name"}),
        panel("stat", "Connections", "Client connections open on TiDB right now.",
              "short", targets((f"sum(tidb_server_connections{{{TIDB}}})", "connections")), w=4, h=4),
        panel("stat", "QPS", "Statements per second executed by TiDB (all statement types).",
              "ops", targets((sum_rate("tidb_executor_statement_total", TIDB), "QPS")), w=4, h=4),
        panel("stat", "p99 query duration", "99th percentile of the time TiDB took to handle a query (general SQL).",
              "s", targets((tidb_query_quantile(0.99, 'sql_type="general"'), "p99")), w=4, h=4),
        panel("stat", "CPU", "CPU used by the tidb-server processes (1 = one core).",
              "percentunit", targets((sum_rate("process_cpu_seconds_total", TIDB), "CPU")), w=4, h=4),
        panel("stat", "Memory", "Resident memory of the tidb-server processes.",
              "bytes", targets((f"sum(process_resident_memory_bytes{{{TIDB}}})", "RSS")), w=4, h=4),
        panel("timeseries", "QPS by statement type",
              "Statements per second by type (Select, Insert, Update, Delete, Begin, Commit, ...).",
              "ops", targets((f"sum by (type) (rate(tidb_executor_statement_total{{{TIDB}}}[{RI}]))", "{{type}}")),
              w=12, custom={"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30}),
        panel("timeseries", "Commands by result",
              "Protocol commands per second by type (Query, StmtExecute, ...) and result (OK or Error).",
              "ops", targets((f"sum by (type, result) (rate(tidb_server_query_total{{{TIDB}}}[{RI}]))", "{{type}} {{result}}")),
              w=12),
        panel("timeseries", "Query duration p95 / p99",
              "95th and 99th percentile of TiDB's query handling time, from its duration histogram.",
              "s", targets((tidb_query_quantile(0.95), "p95"), (tidb_query_quantile(0.99), "p99")), w=12),
        panel("timeseries", "Query duration p99 by statement type",
              "99th percentile of query handling time per statement type.",
              "s", targets((f"histogram_quantile(0.99, sum by (le, sql_type) (rate(tidb_server_handle_query_duration_seconds_bucket{{{TIDB}}}[{RI}])))", "{{sql_type}}")),
              w=12),
        panel("timeseries", "Connections",
              "Client connections open per tidb-server.",
              "short", targets((f"sum by (instance) (tidb_server_connections{{{TIDB}}})", "{{instance}}")), w=8),
        panel("timeseries", "Failed queries",
              "Statements per second that failed, by error type (for example kv:1062 duplicate key, executor:1213 deadlock).",
              "cps", targets((zero_if_absent(
                  f"sum by (type) (rate(tidb_server_execute_error_total{{{TIDB}}}[{RI}]))",
                  sum_rate("tidb_server_query_total", TIDB), "type", "none"), "{{type}}")),
              w=8, custom={"drawStyle": "bars", "fillOpacity": 60}),
        panel("timeseries", "Transaction duration p95",
              "95th percentile of transaction duration by transaction mode and outcome.",
              "s", targets((f'histogram_quantile(0.95, sum by (le, txn_mode, type) (rate(tidb_session_transaction_duration_seconds_bucket{{{TIDB}, scope="general"}}[{RI}])))', "{{txn_mode}} {{type}}")),
              w=8),
        panel("timeseries", "KV command duration p95",
              "95th percentile of the storage commands TiDB sends (get, batch_get, commit, lock_keys, ...).",
              "s", targets((f'histogram_quantile(0.95, sum by (le, type) (rate(tidb_tikvclient_txn_cmd_duration_seconds_bucket{{{TIDB}, scope="general"}}[{RI}])))', "{{type}}")),
              w=12),
        panel("timeseries", "TiDB CPU and memory",
              "CPU (cores, left) and resident memory (right) of each tidb-server.",
              "percentunit", targets(
                  (f"sum by (instance) (rate(process_cpu_seconds_total{{{TIDB}}}[{RI}]))", "CPU {{instance}}"),
                  (f"sum by (instance) (process_resident_memory_bytes{{{TIDB}}})", "RSS {{instance}}")),
              w=12, overrides=[{"matcher": {"id": "byRegexp", "options": "RSS.*"},
                                "properties": [{"id": "unit", "value": "bytes"},
                                               {"id": "custom.axisPlacement", "value": "right"}]}]),
    ]


def tikv_panels():
    """The TiKV row: CPU, latency and storage."""
    return [
        row("TiKV"),
        panel("timeseries", "TiKV CPU",
              "CPU used by each TiKV instance, all its threads together (1 = one core).",
              "percentunit", targets((f"sum by (instance) (rate(tikv_thread_cpu_seconds_total{{{TIKV}}}[{RI}]))", "{{instance}}")),
              w=12),
        panel("timeseries", "TiKV CPU by thread pool",
              "CPU by TiKV thread name (grpc, raftstore, apply, unified read pool, scheduler, ...).",
              "percentunit", targets((f"sum by (name) (rate(tikv_thread_cpu_seconds_total{{{TIKV}}}[{RI}]))", "{{name}}")),
              w=12, options={"legend": {"displayMode": "table", "placement": "right", "calcs": ["mean", "max"], "showLegend": True}}),
        panel("timeseries", "gRPC message duration p99",
              "99th percentile of the time TiKV took to handle each kind of gRPC message (kv_get, kv_prewrite, kv_commit, coprocessor, ...).",
              "s", targets((f'histogram_quantile(0.99, sum by (le, type) (rate(tikv_grpc_msg_duration_seconds_bucket{{{TIKV}, type!="kv_gc"}}[{RI}])))', "{{type}}")),
              w=12),
        panel("timeseries", "Scheduler command duration p99",
              "99th percentile of TiKV's transaction scheduler command duration by command (prewrite, commit, acquire_pessimistic_lock, ...).",
              "s", targets((f"histogram_quantile(0.99, sum by (le, type) (rate(tikv_scheduler_command_duration_seconds_bucket{{{TIKV}}}[{RI}])))", "{{type}}")),
              w=12),
        panel("timeseries", "Store size",
              "Capacity, available and used space of each TiKV store.",
              "bytes", targets((f'sum by (instance, type) (tikv_store_size_bytes{{{TIKV}, type=~"capacity|available|used"}})', "{{instance}} {{type}}")),
              w=12),
        panel("timeseries", "Engine size by column family",
              "Size of the RocksDB column families (default, write, lock, raft) on each TiKV.",
              "bytes", targets((f"sum by (instance, type) (tikv_engine_size_bytes{{{TIKV}}})", "{{instance}} {{type}}")),
              w=12),
        panel("timeseries", "Regions and leaders per TiKV",
              "Regions and Raft leaders held by each TiKV instance.",
              "short", targets((f'sum by (instance, type) (tikv_raftstore_region_count{{{TIKV}, type=~"region|leader"}})', "{{instance}} {{type}}")),
              w=12),
    ]


def pd_panels():
    """The PD row: health and regions."""
    return [
        row("PD"),
        panel("stat", "PD up", "Whether Prometheus reaches each PD member (1 = up).",
              "none", targets((f"up{{{PD}}}", "{{instance}}")), w=6, h=5,
              options={"colorMode": "value", "textMode": "value_and_name"}),
        panel("stat", "Stores up", "TiKV stores that PD sees up and healthy.",
              "short", targets((f'sum(pd_cluster_status{{{PD}, type="store_up_count"}})', "up")), w=6, h=5),
        panel("stat", "Stores not up", "TiKV stores that PD sees disconnected, down, unhealthy, low on space, offline or tombstoned.",
              "short", targets((f'sum(pd_cluster_status{{{PD}, type=~"store_disconnected_count|store_down_count|store_unhealth_count|store_low_space_count|store_offline_count|store_tombstone_count"}})', "not up")),
              w=6, h=5),
        panel("stat", "Regions", "Regions in the cluster (one Raft leader each, as counted by PD).",
              "short", targets((f'sum(pd_cluster_status{{{PD}, type="leader_count"}})', "regions")), w=6, h=5),
        panel("timeseries", "Store status",
              "Number of stores in each state as PD reports it.",
              "short", targets((f'sum by (type) (pd_cluster_status{{{PD}, type=~"store_.*_count"}})', "{{type}}")),
              w=8),
        panel("timeseries", "Region and leader counts",
              "Region replicas (region_count) and leaders (leader_count) over all stores, as counted by PD.",
              "short", targets((f'sum by (type) (pd_cluster_status{{{PD}, type=~"region_count|leader_count"}})', "{{type}}")),
              w=8),
        panel("timeseries", "Region health",
              "Regions with missing, extra, down, pending or offline peers; all 0 on a healthy cluster.",
              "short", targets((f'sum by (type) (pd_regions_status{{{PD}, type=~"miss-peer-region-count|extra-peer-region-count|down-peer-region-count|pending-peer-region-count|offline-peer-region-count"}})', "{{type}}")),
              w=8),
    ]


def tidb():
    items = [*tidb_server_panels(), *tikv_panels(), *pd_panels()]
    variables = [
        testid_var(single=False),
        query_var("tidb_instance", "TiDB", 'label_values(up{job="tidb"}, instance)',
                  "tidb-server status ports scraped by Prometheus.", multi=True, include_all=True),
        query_var("tikv_instance", "TiKV", 'label_values(up{job="tikv"}, instance)',
                  "TiKV status ports scraped by Prometheus (compose cluster only).",
                  multi=True, include_all=True),
    ]
    return dashboard("tbs-tidb", "TiDB cluster",
                     "What the TiDB cluster did during the runs: TiDB statements, latency, connections and errors; TiKV CPU, latency and storage; PD health and regions.",
                     ["tidb", "tikv", "pd"], variables, items)


# ---------------------------------------------------------------------------------------------
# 3. MySQL / MariaDB (mysqld_exporter)
# ---------------------------------------------------------------------------------------------
def mysql():
    m = matchers("mysql")
    items = [
        row("Server"),
        panel("stat", "MySQL up", "Whether mysqld_exporter can reach the server (1 = up).",
              "none", targets((f"mysql_up{{{m}}}", "{{instance}}")), w=4, h=4,
              options={"colorMode": "value", "textMode": "value_and_name"}),
        panel("stat", "Version", "The server's version as it reports it.",
              "none", targets((f"mysql_version_info{{{m}}}", "{{version}}")), w=8, h=4,
              options={"textMode": "name"}),
        panel("stat", "Uptime", "Time since the server started.",
              "s", targets((f"mysql_global_status_uptime{{{m}}}", "uptime")), w=4, h=4),
        panel("stat", "QPS", "Statements per second executed by the server (Queries status counter).",
              "ops", targets((sum_rate("mysql_global_status_queries", m), "QPS")), w=4, h=4),
        panel("stat", "Threads connected", "Client connections open right now.",
              "short", targets((f"sum(mysql_global_status_threads_connected{{{m}}})", "connected")), w=4, h=4),
        panel("timeseries", "Queries and questions",
              "Statements per second: all of them (queries) and those sent by clients (questions).",
              "ops", targets(
                  (sum_rate("mysql_global_status_queries", m), "queries"),
                  (sum_rate("mysql_global_status_questions", m), "questions")),
              w=12),
        panel("timeseries", "Commands by type",
              "Statements per second by command (select, insert, update, delete, begin, commit, rollback).",
              "ops", targets((f'sum by (command) (rate(mysql_global_status_commands_total{{{m}, command=~"select|insert|update|delete|replace|begin|commit|rollback|stmt_execute"}}[{RI}]))', "{{command}}")),
              w=12, custom={"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30}),
        panel("timeseries", "Connections",
              "Threads connected and running, against max_connections.",
              "short", targets(
                  (f"sum(mysql_global_status_threads_connected{{{m}}})", "connected"),
                  (f"sum(mysql_global_status_threads_running{{{m}}})", "running"),
                  (f"sum(mysql_global_variables_max_connections{{{m}}})", "max_connections")),
              w=8),
        panel("timeseries", "Errors and aborts",
              "Aborted connections and clients, and slow queries, per second.",
              "cps", targets(
                  (sum_rate("mysql_global_status_aborted_connects", m), "aborted connects"),
                  (sum_rate("mysql_global_status_aborted_clients", m), "aborted clients"),
                  (sum_rate("mysql_global_status_slow_queries", m), "slow queries")),
              w=8),
        panel("timeseries", "Network traffic",
              "Bytes per second received from and sent to clients.",
              "Bps", targets(
                  (sum_rate("mysql_global_status_bytes_received", m), "received"),
                  (sum_rate("mysql_global_status_bytes_sent", m), "sent")),
              w=8),
        row("Storage engine"),
        panel("timeseries", "Handler operations",
              "Storage-engine row operations per second: index lookups and scans (read_*), writes, updates and deletes.",
              "ops", targets((f'sum by (handler) (rate(mysql_global_status_handlers_total{{{m}, handler=~"read_key|read_next|read_rnd_next|write|update|delete"}}[{RI}]))', "{{handler}}")),
              w=8),
        panel("timeseries", "Buffer pool reads",
              "Logical read requests per second and reads that had to go to disk.",
              "ops", targets(
                  (sum_rate("mysql_global_status_innodb_buffer_pool_read_requests", m), "read requests"),
                  (sum_rate("mysql_global_status_innodb_buffer_pool_reads", m), "disk reads")),
              w=8),
        panel("timeseries", "InnoDB data I/O",
              "Bytes per second InnoDB read from and wrote to its data files.",
              "Bps", targets(
                  (sum_rate("mysql_global_status_innodb_data_read", m), "read"),
                  (sum_rate("mysql_global_status_innodb_data_written", m), "written")),
              w=8),
        row("Client side (k6)"),
        panel("timeseries", "Client p95 / p99 latency",
              "Event latency the load generator measured against this server, from the k6 native histogram (runs selected above).",
              "s", targets(*p95_p99("k6_oltp_latency_seconds", matchers('marker'))),
              w=12),
        panel("timeseries", "Client QPS",
              "Queries per second the load generator completed (runs selected above).",
              "ops", targets((f"sum(rate(k6_oltp_queries_total{{{matchers('marker')}}}[{RI}]))", "QPS")), w=12),
    ]
    variables = [
        testid_var(single=False),
        query_var("mysql_instance", "Server", 'label_values(mysql_up{job="mysqld"}, instance)',
                  "mysqld_exporter targets scraped by Prometheus.", multi=True, include_all=True),
    ]
    return dashboard("tbs-mysql", "MySQL / MariaDB",
                     "What a MySQL or MariaDB target did during the runs, from mysqld_exporter, with the client-side view beside it.",
                     ["mysql", "mariadb"], variables, items)
