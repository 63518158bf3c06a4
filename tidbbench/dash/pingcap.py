"""PingCAP's own Grafana dashboards, prepared for this stack.

TiDB's dashboards (Overview, Performance Overview, TiDB, TiDB Runtime, TiDB Summary) and, in a
cluster, TiKV-Details and PD, exactly as the TiDB version that runs ships them:

  * local stack: pkg/metrics/grafana of the TiDB Go module we build (scripts/lib/versions.sh
    TIDB_MODULE_VERSION; scripts/stack finds the directory in the Go module cache);
  * compose: /tmp/*.json of the official pingcap/tidb-monitor-initializer:${TIDB_VERSION} image,
    the files TiDB Operator provisions with every cluster (compose/pingcap-dashboards.yaml).

Prepared the way tiup and TiDB Operator do it, plus what this stack adds: the datasource
placeholder `${DS_TEST-CLUSTER}` becomes our fixed Prometheus uid, "Test-Cluster" leaves the
titles, each dashboard gets a stable uid (pingcap-<name>) so the Benchmark run dashboard can
link to it, and our run annotations (run start/end, thread steps, from k6_oltp_marker) with
their `testid` variable are added. Panels and queries are PingCAP's, untouched.

    python3 -m tidbbench.dash.pingcap --src DIR --out DIR [--wait]

--wait keeps the process alive after writing (compose runs it as a service whose healthcheck
Grafana waits for). Only the standard library is used (it runs in a plain Python image).
"""
import argparse
import json
import os
import re
import sys
import time

from tidbbench.dash import base  # our annotations, testid variable and links: one definition


# file name (without .json) -> title; the order is the folder's. Files the source lacks are skipped.
DASHBOARDS = {
    "overview": "Overview",
    "performance_overview": "Performance Overview",
    "tidb": "TiDB",
    "tidb_runtime": "TiDB Runtime",
    "tidb_summary": "TiDB Summary",
    "tikv_details": "TiKV Details",
    "pd": "PD",
}
# the dashboards the local stack's TiDB module carries (TiKV and PD ship theirs in their repositories)
LOCAL = ["overview", "performance_overview", "tidb", "tidb_runtime", "tidb_summary"]
FOLDER = "PingCAP"
READY = ".ready"
DS_PLACEHOLDER = re.compile(r"\$\{DS_[A-Za-z0-9_-]+\}")


def uid(name):
    return "pingcap-" + name.replace("_", "-")


def title(name):
    return f"PingCAP {DASHBOARDS[name]}"


def _datasource(v):
    """A panel's or query's datasource reference, with placeholders resolved to our uid."""
    if isinstance(v, str) and (DS_PLACEHOLDER.fullmatch(v) or v.lower() in ("test-cluster", "tidb-cluster")):
        return dict(base.PROM)
    if isinstance(v, dict) and isinstance(v.get("uid"), str) and DS_PLACEHOLDER.fullmatch(v["uid"]):
        return dict(base.PROM)
    return v


def _rewrite(node):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            out[k] = _datasource(v) if k == "datasource" else _rewrite(v)
        return out
    if isinstance(node, list):
        return [_rewrite(x) for x in node]
    if isinstance(node, str) and "${DS_" in node:
        return DS_PLACEHOLDER.sub(base.PROM["uid"], node)
    return node


def prepare_one(d, name):
    d = _rewrite(d)
    d.pop("__inputs", None)
    d.pop("__requires", None)
    d["id"] = None
    d["uid"] = uid(name)
    d["title"] = title(name)
    d["editable"] = False
    d["tags"] = sorted(set(d.get("tags") or []) | {"pingcap"})
    ours = base.annotations()["list"]
    names = {a["name"] for a in ours}
    theirs = [a for a in (d.get("annotations") or {}).get("list", []) if a.get("name") not in names]
    d["annotations"] = {"list": ours + theirs}
    tmpl = (d.get("templating") or {}).get("list", [])
    if not any(v.get("name") == "testid" for v in tmpl):
        tmpl = tmpl + [base.testid_var(single=False)]
    d["templating"] = {"list": tmpl}
    links = [link for link in d.get("links") or [] if "tbs" not in (link.get("tags") or [])]
    d["links"] = links + base.links()
    return d


def prepare(src, out, names=None):
    """Writes out/<name>.json for every known dashboard found in src; returns the names."""
    os.makedirs(out, exist_ok=True)
    done = []
    for name in names or DASHBOARDS:
        path = os.path.join(src, name + ".json")
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        tmp = os.path.join(out, f".{name}.json.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(prepare_one(d, name), f, indent=1, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, os.path.join(out, name + ".json"))
        done.append(name)
    return done


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="directory with PingCAP's dashboard JSON files")
    ap.add_argument("--out", required=True, help="directory Grafana provisions the prepared dashboards from")
    ap.add_argument("--only", help="comma-separated names (default: every known one found in --src)")
    ap.add_argument("--wait", action="store_true", help="stay alive after writing (compose service)")
    args = ap.parse_args(argv)
    names = None
    if args.only:
        names = args.only.split(",")
        bad = [n for n in names if n not in DASHBOARDS]
        if bad:
            print(f"error: unknown dashboard(s) {', '.join(bad)} (valid: {', '.join(DASHBOARDS)})", file=sys.stderr)
            return 2
    if not os.path.isdir(args.src):
        print(f"error: --src {args.src} is not a directory", file=sys.stderr)
        return 2
    ready = os.path.join(args.out, READY)
    if os.path.exists(ready):
        os.remove(ready)
    done = prepare(args.src, args.out, names)
    if not done:
        print(f"error: none of {', '.join(n + '.json' for n in (names or DASHBOARDS))} is in {args.src}",
              file=sys.stderr)
        return 1
    with open(ready, "w") as f:
        f.write(" ".join(done) + "\n")
    print(f"prepared {len(done)} PingCAP dashboard(s) in {args.out}: {', '.join(done)}", flush=True)
    while args.wait:
        time.sleep(3600)
    return 0



if __name__ == "__main__":  # python3 -m tidbbench.dash.pingcap
    sys.exit(main())
