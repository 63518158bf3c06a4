"""Issue 10: the option table of docs/options.md is generated from k6/contract.json
(tidbbench/gen/docs.py); it fails here when either changes without the other."""
import copy
import json
import subprocess
import sys

from conftest import ROOT
from tidbbench.gen import docs as gen_docs

import pytest

pytestmark = pytest.mark.fast

CONTRACT = json.loads((ROOT / "k6/contract.json").read_text())
DOC = ROOT / "docs/options.md"  # the page with the generated table (gen_docs.DOC)


def test_the_table_is_the_contracts():
    assert gen_docs.DOC == DOC
    p = subprocess.run([sys.executable, "-m", "tidbbench.gen.docs", "--check"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def table_rows(text):
    part = text.split(gen_docs.BEGIN, 1)[1].split(gen_docs.END, 1)[0]
    return [line for line in part.splitlines() if line.startswith("| `")]


def test_every_option_is_one_row_with_its_default():
    rows = table_rows(DOC.read_text())
    assert [r.split("`")[1] for r in rows] == list(CONTRACT["options"])
    for r, (name, o) in zip(rows, CONTRACT["options"].items()):
        d = gen_docs.default_text(o["default"])
        assert r.split(" | ")[1] == (f"`{d}`" if d else "(empty)"), r


def test_a_changed_default_or_a_new_option_is_drift():
    text = DOC.read_text()
    assert gen_docs.render(text, CONTRACT) == text
    changed = copy.deepcopy(CONTRACT)
    changed["options"]["time"]["default"] = 11
    assert gen_docs.render(text, changed) != text
    added = copy.deepcopy(CONTRACT)
    added["options"]["new_option"] = {"type": "int0", "default": 0, "help": "x", "group": "run"}
    assert "| `new_option` | `0` | x |" in gen_docs.render(text, added)


def test_readme_links_the_generated_table():
    """The README keeps no copy of the table (it would drift unchecked) and points to the page."""
    readme = (ROOT / "README.md").read_text()
    assert gen_docs.BEGIN not in readme and "| `mysql_host` |" not in readme
    assert "docs/options.md" in readme
