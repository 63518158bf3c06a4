"""The commands of README.md, CONTRIBUTING.md and docs/*.md, read from their `sh` code blocks
(never a hand-kept copy): tests/test_doc_commands.py runs them, tests/test_compose_engine.py
checks that the compose commands it runs are the documented ones.

A block may carry markers, HTML comments on the lines right before its opening fence (the
reader of the rendered page does not see them):

    <!-- doc-test: skip: REASON -->               the block is not run here, and why
    <!-- doc-test: skip-line PREFIX: REASON -->   its commands starting with PREFIX are not run
    <!-- doc-test: run-only PREFIX: REASON -->    only its commands starting with PREFIX run
    <!-- doc-test: compose: REASON -->            run by tests/test_compose_engine.py (Docker)

A command is a line of the block, its trailing `\\` continuations joined and its `# comment`
dropped; PREFIX is compared with the command's words joined by single spaces.
"""
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- doc-test: (skip|skip-line|run-only|compose)(?: ([^:]+?))?: (.+?) -->$")
# a fence may be indented (a block inside a list item, as in CONTRIBUTING.md); its lines lose
# as many leading spaces
FENCE = re.compile(r"^( *)```(\S*)\s*$")
# what a line of ours starts with when it is a command (a block of them must be tagged sh)
COMMAND_START = re.compile(r"^(scripts/|tools/|k8s/|docker |kubectl |helm |[A-Z_]+=\S* (scripts|docker)/?)")


@dataclass
class Block:
    page: Path
    line: int  # the opening fence's line number (1-based)
    lang: str
    text: list  # [(line number, raw line)]
    markers: list = field(default_factory=list)  # [(kind, prefix or None, reason)]
    bad_markers: list = field(default_factory=list)  # marker-like comments that do not parse

    @property
    def where(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def commands(self):
        """[(line number, command)] as the shell reads them: continuations joined, comments and
        blank lines dropped."""
        out, cur, start = [], "", None
        for n, raw in self.text:
            if start is None:
                start = n
            line = raw.rstrip()
            if line.endswith("\\"):
                cur += line[:-1] + " "
                continue
            cmd = strip_comment(cur + line).strip()
            cur = ""
            if cmd:
                out.append((start, cmd))
            start = None
        return out

    def kind(self):
        """'skip', 'compose' or 'run' (the block runs, whole or in part)."""
        kinds = {k for k, _, _ in self.markers}
        for k in ("skip", "compose"):
            if k in kinds:
                return k
        return "run"

    def plan(self):
        """[(line number, command, None or the reason it is not run)] for a 'run' block."""
        only = [(p, r) for k, p, r in self.markers if k == "run-only"]
        skips = [(p, r) for k, p, r in self.markers if k == "skip-line"]
        out = []
        for n, cmd in self.commands():
            norm = " ".join(cmd.split())
            reason = next((r for p, r in skips if norm.startswith(p)), None)
            if only and not any(norm.startswith(p) for p, _ in only):
                reason = only[0][1]
            out.append((n, cmd, reason))
        return out


def strip_comment(line):
    """The line without a shell comment (a `#` at a word's start, outside quotes)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def blocks(pages=PAGES):
    """Every fenced code block of the pages, in document order, with the markers before it."""
    out = []
    for page in pages:
        lines = page.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            indent, b = len(m.group(1)), Block(page, i + 1, m.group(2), [])
            j = i - 1
            while j >= 0 and lines[j].lstrip().startswith("<!--"):
                mm = MARKER.match(lines[j].strip())
                if mm:
                    b.markers.insert(0, (mm.group(1), (mm.group(2) or "").strip() or None, mm.group(3)))
                elif "doc-test" in lines[j]:
                    b.bad_markers.append((j + 1, lines[j]))
                j -= 1
            k = i + 1
            while k < len(lines) and not lines[k].lstrip(" ").startswith("```"):
                raw = lines[k]
                b.text.append((k + 1, raw[min(indent, len(raw) - len(raw.lstrip(" "))):]))
                k += 1
            out.append(b)
            i = k + 1
    return out


def sh_blocks(pages=PAGES):
    return [b for b in blocks(pages) if b.lang == "sh"]


def compose_commands(page, first_heading=None):
    """The `docker compose ...` (and scripts/compose-*) commands of a page's compose-marked sh
    blocks, in order, as word lists; with first_heading, only the first such block after that
    heading."""
    text = page.read_text().splitlines()
    start = 0
    if first_heading:
        start = next(i for i, line in enumerate(text) if line.strip() == first_heading)
    for b in sh_blocks([page]):
        if b.line - 1 < start or b.kind() != "compose":
            continue
        return [cmd.split() for _, cmd in b.commands()]
    raise AssertionError(f"no compose block in {page}" + (f" after {first_heading!r}" if first_heading else ""))
