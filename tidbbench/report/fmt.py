"""Names and number formats shared by the report's parts."""
import datetime
import re

from tidbbench import contract



PRODUCTS = {"tidb": "TiDB", "mariadb": "MariaDB", "mysql": "MySQL"}


def workload_name(w):
    """The seeds' title of a workload: "oltp_read_write" -> "Read Write"; a workload whose title is
    not made from its name declares it (k6/contract.json: oltp_update_non_index -> "Update Non-index")."""
    if w == contract.TPCC:
        return "TPC-C"
    title = contract.workload(w).get("title")
    if title:
        return title
    return (w[len("oltp_"):] if w.startswith("oltp_") else w).replace("_", " ").title()


def product_name(p):
    return PRODUCTS.get(p, p or "database")


def short_version(product, version):
    """What the seeds call a version: v3.0.0, 10.11.19-MariaDB. Build metadata (+...) goes."""
    v = (version or "").split("+", 1)[0]
    # a Go pseudo-version (a module build of a commit): keep the base and the commit
    m = re.match(r"^(v\d+\.\d+\.\d+(?:-[0-9A-Za-z]+(?:\.\d+)?)?)[.-]\d{14}-([0-9a-f]{12})$", v)
    if m:
        return f"{m.group(1)}-{m.group(2)}"
    if product in ("mariadb", "mysql"):
        m = re.match(r"^(\d+\.\d+\.\d+)", v)
        if m:
            return m.group(1)
    return v or "unknown version"


def runset_label(rs):
    """The label of a run set in tables and sentences: "TiDB v8.1.0", "MariaDB 10.11.19"."""
    return f"{product_name(rs.product)} {short_version(rs.product, rs.version)}"


def utc(ms, unknown="?"):
    """Epoch ms as "2026-12-01 20:25:00 UTC" (`unknown` for None)."""
    if ms is None:
        return unknown
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def num(x, d=2):
    return f"{x:.{d}f}"


def pct(x):
    return f"{x:.2f}%"


def md_cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def md_table(header, rows, align=None):
    """align: None (all left), or a string of l/r per column."""
    align = ["---:" if c == "r" else "---" for c in align] if align else ["---"] * len(header)
    out = ["| " + " | ".join(md_cell(h) for h in header) + " |",
           "| " + " | ".join(align) + " |"]
    for r in rows:
        out.append("| " + " | ".join(md_cell(c) for c in r) + " |")
    return "\n".join(out)
