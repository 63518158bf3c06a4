"""scripts/sweep and tbs-sweep: a sweep (tidbbench.sweep.sweep) or, with --plan, a plan's arms
interleaved (tidbbench.sweep.plan). The one module that imports both: plan builds on sweep's run
mechanics, sweep knows nothing of plans, so neither imports the other back."""
import sys

from tidbbench import ReportError
from tidbbench.sweep import plan, sweep


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        a, workloads, extra, base = sweep.parse_args(argv)
        if a.plan:
            return plan.run_plan(a, argv)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    return sweep.run_sweep(a, workloads, extra, base, argv)


if __name__ == "__main__":  # scripts/sweep runs it with python -m
    sys.exit(main())
