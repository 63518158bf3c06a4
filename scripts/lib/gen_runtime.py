#!/usr/bin/env python3
"""Writes the per-mode runtime files from runtime/stack.json and prints settings for scripts/stack
(tbsreport/gen_runtime.py has the details; in Python, `from tbsreport import gen_runtime`).
  python3 scripts/lib/gen_runtime.py [--check | --prometheus-flags | --k6-env local|compose | --grafana-env | --ports]
Standard library only; the package tbsreport is found beside this file (Python puts a script's
own directory on sys.path), so any python3 runs it."""
import sys

from tbsreport.gen_runtime import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
