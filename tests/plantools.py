"""A plan file for the tests of tidbbench/sweep/plan.py's checks (tests/test_compare.py,
tests/test_duet.py): a base plan with keys changed."""
import copy
import json


def write_plan(tmp_path, base, **change):
    """`base` with keys changed (None: removed), written as tmp_path/plan.json."""
    p = copy.deepcopy(base)
    for k, v in change.items():
        if v is None:
            p.pop(k, None)
        else:
            p[k] = v
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(p))
    return f
