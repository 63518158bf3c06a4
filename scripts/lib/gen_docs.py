#!/usr/bin/env python3
"""Writes the option table of docs/options.md from k6/contract.json (tbsreport/gen_docs.py;
`--check` writes nothing and exits 1 when the page is out of date).
  python3 scripts/lib/gen_docs.py [--check]
Standard library only; the package tbsreport is found beside this file (Python puts a script's
own directory on sys.path), so any python3 runs it."""
import sys

from tbsreport.gen_docs import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
