"""Issue 45, a map that is checked: the paths the docs name exist, and docs/ARCHITECTURE.md names
every top-level folder and every subpackage of tidbbench/.

The rule for a path (README.md, CONTRIBUTING.md, docs/*.md; a fenced block with a language, such
as the `sh` blocks tests/test_doc_commands.py runs, is left out; an untagged one, a drawing, is
read as one code span):
  - a relative link target ([text](target), not a URL, not an anchor alone) must exist, read from
    the doc's own folder, without its #anchor;
  - a word of an inline code span (`...`; words split at blanks and = , ; : ( ) quotes) that starts
    with a top-level folder of the repository (git ls-files) and a '/' must exist in the checkout,
    without its #anchor; except a placeholder or glob (< > * ? [ ] { } $ or ...), what a run makes
    under results/ (.stack/ and bin/ are not in git, so never a top-level folder), and the few
    names of NOT_PATHS, which look like paths but name something else.
docs/ARCHITECTURE.md names a top-level folder (git ls-files) or a subpackage when a table row's
first cell holds it as a code span: `folder/...` (the folder tables) or `tidbbench.sub...` (the
package table)."""
import re
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.fast

ARCH = ROOT / "docs/ARCHITECTURE.md"
# words that start like a repository path but name something else
NOT_PATHS = {
    "k6/execution": "k6's own JavaScript module",
    "k6/metrics": "k6's own JavaScript module",
    "grafana/k6-operator": "the Helm chart (docs/kubernetes.md)",
}
NOT_PATH_PREFIXES = ("k6/x/",)  # JavaScript import paths of k6 extensions: k6/x/tbs, k6/x/sql/...
RUNTIME = ("results/",)  # made by a run
PLACEHOLDER = re.compile(r"[<>*?\[\]{}$]|\.\.\.")
SPLIT = re.compile(r"[\s=,;:()'\"]+")
FENCE = re.compile(r"^ *(```|~~~)(\w*)\n(.*?)^ *\1", re.M | re.S)
CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def docs():
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def tracked():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def top_folders(files):
    return {f.split("/")[0] for f in files if "/" in f}


def prose(text):
    """The doc without its fenced code blocks (each replaced by as many blank lines)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def spans(text):
    """(line, text) of every inline code span outside the fences and of every untagged fence."""
    out = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in CODE.finditer(prose(text))]
    for m in FENCE.finditer(text):
        if not m.group(2):
            first = text.count("\n", 0, m.start(3)) + 1
            out += [(first + i, line) for i, line in enumerate(m.group(3).splitlines())]
    return out


def named_paths(text, tops):
    """[(line, word)] of every repository path named in a code span or a drawing, by the rule above."""
    out = []
    for line, span in spans(text):
        for word in SPLIT.split(span):
            word = word.split("#")[0].rstrip(".")
            top = word.split("/")[0]
            if "/" not in word or top not in tops or PLACEHOLDER.search(word):
                continue
            if word in NOT_PATHS or word.startswith(NOT_PATH_PREFIXES + RUNTIME):
                continue
            out.append((line, word))
    return out


def links(text):
    """[(line, target)] of every relative link target."""
    out = []
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        out.append((text.count("\n", 0, m.start()) + 1, target))
    return out


def broken(doc, text, tops, root=ROOT):
    """'doc:line: path' of every path the doc names that does not exist."""
    rel = doc.relative_to(root)
    bad = [f"{rel}:{n}: `{w}`" for n, w in named_paths(text, tops) if not (root / w).exists()]
    bad += [f"{rel}:{n}: link {t}" for n, t in links(prose(text)) if not (doc.parent / t.split("#")[0]).exists()]
    return bad


def first_cells(text):
    """The code spans of every table row's first cell."""
    out = []
    for line in text.splitlines():
        if line.startswith("|") and not re.match(r"\|\s*-", line):
            out += CODE.findall(line.split("|")[1])
    return out


def unnamed(text, folders, subpackages):
    cells = first_cells(text)
    miss = [f"folder {f}/" for f in sorted(folders) if not any(c.startswith(f + "/") for c in cells)]
    miss += [f"subpackage {p}" for p in sorted(subpackages)
             if not any(c == p or c.startswith(p + ".") or c.startswith(p + " ") for c in cells)]
    return miss


def subpackages():
    return {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "tidbbench").rglob("__init__.py")
            if p.parent != ROOT / "tidbbench"}


def test_every_path_the_docs_name_exists():
    tops = top_folders(tracked())
    assert {"k6", "tidbbench", "docs", "scripts"} <= tops, tops
    checked, bad = 0, []
    for doc in docs():
        text = doc.read_text()
        checked += len(named_paths(text, tops)) + len(links(prose(text)))
        bad += broken(doc, text, tops)
    assert checked > 300, f"only {checked} paths found in the docs: is the rule still reading them?"
    assert not bad, "paths named in the docs that do not exist (fix the doc, or the rule in this file's docstring):\n" + \
        "\n".join(bad)


def test_architecture_names_every_top_level_folder_and_subpackage():
    folders = top_folders(tracked())
    subs = subpackages()
    assert {"tidbbench.report", "tidbbench.history"} <= subs, subs
    miss = unnamed(ARCH.read_text(), folders, subs)
    assert not miss, ("docs/ARCHITECTURE.md has no table row for (add one: what it owns):\n" + "\n".join(miss))


def test_the_checks_see_a_missing_path_and_an_unnamed_folder(tmp_path):
    # negative control, on a doc of our own
    (tmp_path / "docs").mkdir()
    (tmp_path / "k6" / "lib").mkdir(parents=True)
    (tmp_path / "k6" / "lib" / "config.js").write_text("")
    doc = tmp_path / "docs" / "x.md"
    text = ("`k6/lib/config.js` and `k6/lib/workloads`, `scripts/k6 run k6/lib/gone.js`, `k6/x/tbs`,\n"
            "`results/history.sqlite`, `k6/lib/*.js`, `k6/<name>/`, [ok](../k6/lib/config.js), [no](nope.md#a),\n"
            "[web](https://example.com/a/b)\n```sh\nk6/lib/in-a-command.js\n```\n"
            "```\ndrawing  k6/lib/config.js -> k6/lib/drawn.js\n```\n")
    assert broken(doc, text, {"k6"}, tmp_path) == ["docs/x.md:1: `k6/lib/workloads`", "docs/x.md:1: `k6/lib/gone.js`",
                                                   "docs/x.md:8: `k6/lib/drawn.js`", "docs/x.md:2: link nope.md#a"]
    table = "| folder | owns |\n| --- | --- |\n| `k6/` | x |\n| `.ci/run` | y |\n\n| module |\n| --- |\n| `tidbbench.report` |\n"
    assert unnamed(table, {"k6", ".ci"}, {"tidbbench.report"}) == []
    assert unnamed(table + "`tools/` in prose, `tidbbench.history.cli` too\n", {"k6", "tools"},
                   {"tidbbench.report", "tidbbench.history"}) == ["folder tools/", "subpackage tidbbench.history"]


def test_the_readme_is_at_most_250_lines():
    # issue 45: what the tool is, the two commands, the user's day in brief, where to read next;
    # the detail lives in docs/ and CONTRIBUTING.md
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines (at most 250: move the detail to docs/)"
