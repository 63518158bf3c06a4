"""Issue 30: every test file has a tier (CONTRIBUTING.md): `pytestmark = pytest.mark.fast` (no
server, no build beyond Go's cache: scripts/test --fast) or `pytest.mark.full` (the stack, our k6,
long runs: scripts/test); a fast file's test that needs more carries @pytest.mark.full. The
conftest's collection hook refuses an untiered test too; this test names the file."""
import ast

import pytest

from conftest import ROOT, TIERS

pytestmark = pytest.mark.fast


def tier_of(path):
    """The tier the file's module-level pytestmark names, or None."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            names = {m.attr for m in marks if isinstance(m, ast.Attribute)}
            found = names & set(TIERS)
            return found.pop() if len(found) == 1 else None
    return None


def test_every_test_file_has_one_tier():
    files = sorted((ROOT / "tests").glob("test_*.py"))
    assert len(files) > 30
    missing = [f.name for f in files if tier_of(f) is None]
    assert not missing, ("test files without a tier: add `pytestmark = pytest.mark.fast` (no server, no "
                         f"build) or `pytest.mark.full` (CONTRIBUTING.md): {missing}")


def test_the_tier_check_sees_a_file_without_one(tmp_path):
    # negative control
    (tmp_path / "test_x.py").write_text("import pytest\n\ndef test_x():\n    pass\n")
    (tmp_path / "test_y.py").write_text("import pytest\n\npytestmark = [pytest.mark.full]\n")
    assert tier_of(tmp_path / "test_x.py") is None and tier_of(tmp_path / "test_y.py") == "full"


def test_scripts_test_fast_selects_the_fast_tier():
    text = (ROOT / "scripts/test").read_text()
    assert '-m "fast and not full"' in text and "go test -short" in text and "TBS_TIER=fast" in text
