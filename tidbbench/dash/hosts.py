"""4. Hosts (node_exporter) and 6. Logs (Loki)."""
from tidbbench.dash.base import (FS_TYPES_EXCLUDED, LOKI, NET_DEVICES_EXCLUDED, RI, dashboard, panel, query_var, row, matchers,
                                 target, targets, testid_var, textbox_var)


# ---------------------------------------------------------------------------------------------
# 4. Hosts (node_exporter)
# ---------------------------------------------------------------------------------------------
def hosts():
    n = matchers("node")
    cores = f'count by (instance) (node_cpu_seconds_total{{{n}, mode="idle"}})'
    items = [
        row("CPU and memory"),
        panel("timeseries", "CPU busy",
              "Share of all CPU time not idle, per host (database hosts and the load generator's host).",
              "percentunit", targets((f'1 - avg by (instance) (rate(node_cpu_seconds_total{{{n}, mode="idle"}}[{RI}]))', "{{instance}}")),
              w=12, min_=0, max_=1),
        panel("timeseries", "CPU by mode",
              "Share of CPU time per mode (user, system, iowait, steal, ...), per host.",
              "percentunit", targets((f'sum by (instance, mode) (rate(node_cpu_seconds_total{{{n}, mode!="idle"}}[{RI}])) / on (instance) group_left () {cores}', "{{instance}} {{mode}}")),
              w=12, custom={"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30}),
        panel("timeseries", "Load per core",
              "1-minute load average divided by the number of cores, per host.",
              "short", targets((f"sum by (instance) (node_load1{{{n}}}) / on (instance) {cores}", "{{instance}}")),
              w=12),
        panel("timeseries", "Memory used",
              "Memory in use (total minus available), per host.",
              "bytes", targets(
                  (f"sum by (instance) (node_memory_MemTotal_bytes{{{n}}} - node_memory_MemAvailable_bytes{{{n}}})", "{{instance}} used"),
                  (f"sum by (instance) (node_memory_MemTotal_bytes{{{n}}})", "{{instance}} total")),
              w=12),
        row("Disk"),
        panel("timeseries", "Disk throughput",
              "Bytes per second read (negative) and written, per host and device.",
              "Bps", targets(
                  (f"-sum by (instance, device) (rate(node_disk_read_bytes_total{{{n}}}[{RI}]))", "{{instance}} {{device}} read"),
                  (f"sum by (instance, device) (rate(node_disk_written_bytes_total{{{n}}}[{RI}]))", "{{instance}} {{device}} write")),
              w=8),
        panel("timeseries", "Disk IOPS",
              "Read (negative) and write operations per second, per host and device.",
              "iops", targets(
                  (f"-sum by (instance, device) (rate(node_disk_reads_completed_total{{{n}}}[{RI}]))", "{{instance}} {{device}} read"),
                  (f"sum by (instance, device) (rate(node_disk_writes_completed_total{{{n}}}[{RI}]))", "{{instance}} {{device}} write")),
              w=8),
        panel("timeseries", "Disk busy",
              "Share of time each device had I/O in flight, per host.",
              "percentunit", targets((f"sum by (instance, device) (rate(node_disk_io_time_seconds_total{{{n}}}[{RI}]))", "{{instance}} {{device}}")),
              w=8),
        panel("timeseries", "Filesystem used",
              "Share of each filesystem in use, per host.",
              "percentunit", targets((f'1 - sum by (instance, mountpoint) (node_filesystem_avail_bytes{{{n}, fstype!~"{FS_TYPES_EXCLUDED}"}}) / sum by (instance, mountpoint) (node_filesystem_size_bytes{{{n}, fstype!~"{FS_TYPES_EXCLUDED}"}})', "{{instance}} {{mountpoint}}")),
              w=24, h=6, min_=0, max_=1),
        row("Network"),
        panel("timeseries", "Network traffic",
              "Bytes per second received (negative) and sent, per host and interface (loopback included: a single-host stack talks over it).",
              "Bps", targets(
                  (f'-sum by (instance, device) (rate(node_network_receive_bytes_total{{{n}, device!~"{NET_DEVICES_EXCLUDED}"}}[{RI}]))', "{{instance}} {{device}} in"),
                  (f'sum by (instance, device) (rate(node_network_transmit_bytes_total{{{n}, device!~"{NET_DEVICES_EXCLUDED}"}}[{RI}]))', "{{instance}} {{device}} out")),
              w=24),
    ]
    variables = [
        testid_var(single=False),
        query_var("host", "Host", 'label_values(node_uname_info{job="node"}, instance)',
                  "Hosts running node_exporter, the load generator's included.",
                  multi=True, include_all=True),
    ]
    return dashboard("tbs-hosts", "Hosts",
                     "CPU, memory, disk and network of every host of the stack, the load generator's included.",
                     ["hosts", "node"], variables, items)


# ---------------------------------------------------------------------------------------------
# 6. Logs (Loki)
# ---------------------------------------------------------------------------------------------
def logs():
    log_streams = matchers("logs")
    items = [
        row("Logs of the time range (open it from the Run table of the Benchmark run dashboard)"),
        panel("timeseries", "Log lines by service",
              "Log lines per interval, by service.",
              "short", [target(f'sum by (service) (count_over_time({{{log_streams}}} |~ "$search" [$__interval]))',
                               "{{service}}", ds=LOKI)],
              ds=LOKI, w=12, h=7, custom={"drawStyle": "bars", "fillOpacity": 60,
                                          "stacking": {"mode": "normal", "group": "A"}}),
        panel("timeseries", "Errors and warnings by service",
              "Log lines mentioning an error, warning, panic or fatal condition, by service (0 for a service with none).",
              "short", [target(f'sum by (service) (count_over_time({{{log_streams}}} |~ "(?i)(error|warn|panic|fatal)" [$__interval]))'
                               f' or sum by (service) (0 * count_over_time({{{log_streams}}} [$__interval]))',
                               "{{service}}", ds=LOKI)],
              ds=LOKI, w=12, h=7, custom={"drawStyle": "bars", "fillOpacity": 60,
                                          "stacking": {"mode": "normal", "group": "A"}}),
        panel("logs", "k6 lines of the chosen runs",
              "What k6 printed in the runs chosen above (service k6-run, label testid: one file per run, "
              "written by scripts/k6 locally and by the k6 image's entrypoint in compose), filtered by the search text.",
              "none", [target('{service="k6-run", testid=~"$testid"} |~ "$search"', ds=LOKI)], ds=LOKI, w=24, h=10),
        panel("logs", "Logs",
              "Log lines of the chosen services in the time range, newest first, filtered by the search text.",
              "none", [target(f'{{{log_streams}}} |~ "$search"', ds=LOKI)], ds=LOKI, w=24, h=20),
    ]
    variables = [
        testid_var(single=False),
        query_var("service", "Service", "label_values(service)",
                  "Services shipping logs to Loki (tidb, tikv, pd, k6, ...).", ds=LOKI,
                  multi=True, include_all=True, all_value=".+"),
        textbox_var("search", "Search (regex)", "",
                    "Only lines matching this regular expression (empty = all lines)."),
    ]
    return dashboard("tbs-logs", "Logs",
                     "The logs of every service of the stack in Loki over the chosen time range, by service.",
                     ["logs", "loki"], variables, items)
