"""What differs between two run sets, before any figure: every global variable
(`SHOW GLOBAL VARIABLES`, saved in each run manifest), the versions, the runs' options, the
load generator's host, the data, and the plan's `set_global`; the settings that differ first.
A value that changes from one sample to the next within a side (a timestamp, a counter) is not
a difference between the sides and is listed apart."""
from tidbbench import commands
from tidbbench.report.fmt import md_table, product_name

# variables that change by themselves from one run to the next (not a setting)
VOLATILE = {"timestamp", "tidb_current_ts", "tidb_last_txn_info", "tidb_last_query_info", "last_insert_id",
            "pseudo_thread_id", "rand_seed1", "rand_seed2", "warning_count", "error_count", "identity",
            "tidb_last_plan_replayer_token", "insert_id", "gtid_binlog_pos", "gtid_current_pos", "gtid_binlog_state",
            "gtid_slave_pos", "server_uuid", "tidb_config"}
SHOWN = 40  # variables listed at most when two products differ


def side_values(runs, get):
    vals = []
    for r in runs:
        v = get(r)
        if v not in vals:
            vals.append(v)
    return vals


def text(vals):
    return " / ".join("—" if v is None else str(v) for v in vals)


def rows(sets):
    """[(kind, name, [text a, text b], varies_within)] of what differs, settings first."""
    out, varying = [], []

    def add(kind, name, get):
        va, vb = side_values(sets[0].runs, get), side_values(sets[1].runs, get)
        if len(va) > 1 or len(vb) > 1:
            if va != vb:
                varying.append((kind, name, [text(va), text(vb)]))
            return
        if va != vb:
            out.append((kind, name, [text(va), text(vb)]))
    sg = {}
    for s in sets:
        sg.update((s.sweep or {}).get("set_global") or {})
    names = []
    for s in sets:
        for r in s.runs:
            names.extend(k for k in (r.manifest.get("target_variables") or {}) if k not in names)
    # the plan's set_global first, then the other variables in name order
    ordered = [n for n in sg if n in names] + sorted(n for n in names if n not in sg)
    for n in ordered:
        if n in VOLATILE:
            continue
        add("variable", n, lambda r, n=n: (r.manifest.get("target_variables") or {}).get(n))
    add("version", "target version", lambda r: (r.manifest.get("version_full") or r.manifest.get("version") or "")
        .splitlines()[0] if (r.manifest.get("version_full") or r.manifest.get("version")) else None)
    add("version", "product", lambda r: product_name(r.manifest.get("product", "")))
    add("target", "address", lambda r: "{host}:{port}/{db}".format(
        **{k: (r.manifest.get("target") or {}).get(k, "?") for k in ("host", "port", "db")}))
    opt_names = []
    for s in sets:
        for r in s.runs:
            opt_names.extend(k for k in r.options if k not in opt_names)
    for k in opt_names:
        if k in commands.NEVER or k == "workload":
            continue
        add("option", k, lambda r, k=k: commands.value_text(r.options[k]) if k in r.options else None)
    for k in ("hostname", "cpu_model", "cpu_cores", "memory_gib", "gomaxprocs", "k6"):
        add("host", f"load generator {k}", lambda r, k=k: (r.manifest.get("load_generator") or {}).get(k))
    for k in ("kernel", "cores", "memory_gib"):
        add("host", f"host {k}", lambda r, k=k: sample_host(r).get(k))
    for k in ("reset", "analyze", "repeats"):
        va, vb = [(s.sweep or {}).get(k, 1 if k == "repeats" else False) for s in sets]
        if va != vb:
            out.append(("data" if k != "repeats" else "samples", k, [str(va), str(vb)]))
    return out, varying


HARDWARE = (("cpu_model", "CPU"), ("cpu_cores", "cores"), ("memory_gib", "memory (GiB)"))


def hardware(sets, labels):
    """Markdown lines that open a comparison across different hardware or host classes (the load
    generator's CPU model, cores or memory differ between the sides, as conbench refuses such a
    comparison): what differs, and that the figures compare the machines too; [] otherwise."""
    diffs = []
    for k, what in HARDWARE:
        va, vb = (side_values(s.runs, lambda r, k=k: (r.manifest.get("load_generator") or {}).get(k)) for s in sets)
        if va != vb and None not in va + vb:
            diffs.append(f"{what} {text(va)} against {text(vb)}")
    if not diffs:
        return []
    return [f"> **Different hardware:** {labels[1]} and {labels[0]} ran on different host classes "
            f"({'; '.join(diffs)}): every figure below compares the machines as well as the software, and "
            "no change can be put down to the software alone.", ""]


def sample_host(run):
    """The host the sweep recorded for this sample (tidbbench/sweep/sweep.py's host_info)."""
    return (run.entry or {}).get("host") or {}


def section(sets, labels):
    """Markdown lines of the "What differs" section (for a pair)."""
    diff, varying = rows(sets)
    lines = ["## What differs", ""]
    nvars = len({k for s in sets for r in s.runs for k in (r.manifest.get("target_variables") or {})})
    lines.append(f"Everything each run recorded, compared between the sides before any figure: the {nvars} global "
             "variables (`SHOW GLOBAL VARIABLES` at the start of every run), versions, options, the load "
             "generator's host and the data. Settings first.")
    lines.append("")
    if not diff:
        lines.append("Nothing recorded differs between the sides: same versions, options, host and global variables.")
        lines.append("")
    else:
        prods = {s.product for s in sets}
        shown = diff
        cut = 0
        if len(prods) > 1:
            var = [d for d in diff if d[0] == "variable"]
            if len(var) > SHOWN:
                cut = len(var) - SHOWN
                keep = set(id(d) for d in var[:SHOWN])
                shown = [d for d in diff if d[0] != "variable" or id(d) in keep]
            # different products: the product and version lead
            shown = [d for d in shown if d[0] == "version"] + [d for d in shown if d[0] != "version"]
        lines.append(md_table(["What", "Setting", *labels], [[k, f"`{n}`", *v] for k, n, v in shown]))
        lines.append("")
        if cut:
            lines.append(f"... and {cut} more variables that differ (different products; all are in the run manifests).")
            lines.append("")
    if varying:
        lines.append("Changing from one sample to the next within a side (not a difference between the sides): "
                 + ", ".join(f"`{n}`" for _, n, _ in varying) + ".")
        lines.append("")
    return lines
