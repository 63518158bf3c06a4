#!/usr/bin/env python3
"""Dashboards as code for tidb-bench-stack: writes grafana/dashboards/ (see grafana/tbsdash/).

    python3 grafana/generate.py            # (re)write grafana/dashboards/
    python3 grafana/generate.py --out DIR  # write somewhere else (the drift test does this)

Standard library only; grafana/tbsdash is found beside this file (Python puts a script's own
directory on sys.path)."""
import sys

from tbsdash.generate import main

if __name__ == "__main__":
    sys.exit(main())
