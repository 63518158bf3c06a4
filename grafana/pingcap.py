#!/usr/bin/env python3
"""PingCAP's own Grafana dashboards, prepared for this stack (see grafana/tbsdash/pingcap.py).

    python3 grafana/pingcap.py --src DIR --out DIR [--only NAMES] [--wait]

Standard library only (compose runs it in a plain Python image, with grafana/ and contract/
mounted); grafana/tbsdash is found beside this file (Python puts a script's own directory on
sys.path)."""
import sys

from tbsdash.pingcap import main

if __name__ == "__main__":
    sys.exit(main())
