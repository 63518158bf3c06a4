"""scripts/report: a seed-style report of one run, or of a baseline and a candidate."""
import argparse
import os
import sys
from pathlib import Path

from tidbbench import ReportError, contract
from tidbbench.report.manifest import resolve
from tidbbench.report.prom import Prometheus

DESCRIPTION = """\
Writes a report (report.md, report.html, charts/, snapshots/) of one run, or compares two
(baseline RUN and CANDIDATE_RUN, matched workload by workload; TPC-C runs of k6/tpcc.js in the
layout of PingCAP's TPC-C reports, docs/tpcc.md). A RUN is a testid (a run
manifest results/<testid>.json) or a sweep id (results/sweep-<id>.json, written by
scripts/sweep). Figures come from Prometheus over each step's measured window and are
cross-checked against the manifest's k6 summary (warnings on stderr and in the report).
"""

EPILOG = """\
examples:
  scripts/report 20261122-164931-db80
  scripts/report sweep-20261122-170000-ab12 sweep-20261123-090000-cd34
  scripts/report plan-aa1                     (a plan's first two arms; scripts/sweep --plan)
  scripts/report --out /tmp/ab --grafana http://admin@127.0.0.1:3000 \
                 --grafana-password-file .stack/secrets/grafana-admin RUN_A RUN_B
exit codes: 0 report written, 2 bad input (unknown run, no workload in common),
            3 Prometheus has no data for a run, 1 anything else.
"""


def parser():
    ap = argparse.ArgumentParser(prog="scripts/report", description=DESCRIPTION, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", metavar="RUN", help="testid or sweep id (the baseline when a candidate is given)")
    ap.add_argument("candidate", metavar="CANDIDATE_RUN", nargs="?", help="testid or sweep id to compare with RUN")
    ap.add_argument("--out", metavar="DIR", help="report folder (default: results/report-<RUN>[-vs-<CANDIDATE>])")
    ap.add_argument("--prometheus", metavar="URL",
                    default=os.environ.get("TBS_PROMETHEUS_URL") or "http://127.0.0.1:9090",
                    help="Prometheus with the runs' series (default: $TBS_PROMETHEUS_URL or http://127.0.0.1:9090)")
    ap.add_argument("--grafana", metavar="URL", default=os.environ.get("GRAFANA_URL") or None,
                    help="Grafana with the image renderer, for panel snapshots (default: $GRAFANA_URL; "
                         "user@ in the URL with --grafana-password-file, or $GRAFANA_TOKEN, authenticate; "
                         "a password in the URL is refused: it would show in the process list)")
    ap.add_argument("--grafana-password-file", metavar="FILE", default=os.environ.get("GRAFANA_PASSWORD_FILE") or None,
                    help="the password of the --grafana URL's user (default admin), read from FILE "
                         "(default: $GRAFANA_PASSWORD_FILE)")
    ap.add_argument("--results", metavar="DIR", default=str(contract.results_dir()),
                    help="where the run and sweep manifests are (default: $results_dir or results/)")
    return ap


def main(argv=None, fetch=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    try:
        from tidbbench.report import grafana
        if any(a == "--grafana" or a.startswith("--grafana=") for a in argv):
            bad = grafana.password_in_argument(args.grafana)
            if bad:
                raise ReportError(bad, code=2)
        if args.grafana and args.grafana_password_file:
            try:
                args.grafana = grafana.with_password_file(args.grafana, args.grafana_password_file)
            except ValueError as e:
                raise ReportError(str(e), code=2)
        results = Path(args.results)
        run, cand = args.run, args.candidate
        if run.startswith("plan-") and not cand:  # a plan: its first two arms
            import json
            pf = results / f"{run}.json"
            if not pf.is_file():
                raise ReportError(f"unknown plan '{run}': no plan manifest {pf}", code=2)
            arms = list(json.loads(pf.read_text()).get("arms", {}).values())
            if len(arms) < 2:
                raise ReportError(f"plan '{run}' ({pf}) lists fewer than two arms", code=2)
            run, cand = arms[0], arms[1]
        base = resolve(results, run)
        sets = [base]
        if cand:
            sets.append(resolve(results, cand))
        from tidbbench.report.report import Report  # matplotlib is imported only once the input is known good
        from tidbbench.report import tpcc
        if tpcc.check_sets(sets):  # k6/tpcc.js's runs: PingCAP's TPC-C report layout
            Report = tpcc.TpccReport
        rep = Report(sets, Prometheus(args.prometheus, fetch=fetch), grafana_url=args.grafana)
        rep.collect()
        for w in rep.warnings:
            print(f"warning: {w}", file=sys.stderr)
        out = Path(args.out) if args.out else results / (
            f"report-{base.id}" + (f"-vs-{sets[1].id}" if len(sets) > 1 else ""))
        out = rep.write(out)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    print(f"report: {out / 'report.md'}")
    print(f"        {out / 'report.html'}")
    return 0


if __name__ == "__main__":  # scripts/report runs it with python -m
    sys.exit(main())
