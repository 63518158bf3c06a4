"""tools/report-diff: do two reports made by scripts/report agree? For checking a refactor: the
same run made before and after a change (docs/report.md, "Checking a refactor").

  tools/report-diff [--tolerance 0.5] [--abs-tolerance 0.05] [--column-tolerance COLUMN=REL ...]
                    [--alias OLD=NEW ...] A B

A and B are report.md files or their folders (results/report-<id>/). Each is read with
Python-Markdown (pinned in tidbbench/requirements.txt, the report's own HTML renderer) into its
blocks: headings, tables, paragraphs, list items, code blocks. They agree when:

- the same sections (heading level and text) come in the same order;
- each section has the same blocks in the same order: the same prose and code (exactly), the same
  tables with the same columns and the same row labels (the first column; rows are matched by
  label, not position: some tables, the statements', are ranked by a measured figure);
- key/value tables (a second column headed Value or Version: the run, target, parameters,
  variables, versions) are identical, as are table cells that are not numbers (statements,
  digests, options, units, words such as "window too short");
- every number in another table's cell is within the tolerance of the other side's:
  |a - b| <= max(TOLERANCE x max(|a|, |b|), ABS_TOLERANCE). Two runs' figures differ by noise;
  on the shared 2-core local stack the same run's QPS varies by up to about 2x between runs
  (docs/report.md), so the default is loose: this checks the report's shape and its fixed values,
  and catches figures that are wrong by a factor, not small changes (that is what repeated,
  interleaved samples are for: scripts/sweep --plan). --column-tolerance gives a column its own
  (max=0.9: a step's slowest event is one sample, noisier than any other figure).

What belongs to one run only is masked before comparing: testids (their format, YYYYMMDD-HHMMSS-
and 4 hex digits, must hold; anything else stays literal), UTC timestamps, the stack's commit.
--alias OLD=NEW reads OLD in A as NEW (e.g. a database name each run had of its own). Exit 0
when they agree, 1 with the list of differences, 2 on bad input (naming it)."""
import argparse
import difflib
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import markdown

TESTID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{4}\b")
TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?: ?UTC|Z)?")
COMMIT = re.compile(r"\bcommit [0-9a-f]{7,40}\b")
NUMBER = re.compile(r"[+-]?(?:\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)")
KEY_VALUE = {"value", "version"}  # a table whose second column is one of these is compared exactly


class BadInput(Exception):
    pass


def mask(text, aliases=()):
    for old, new in aliases:
        text = text.replace(old, new)
    text = TESTID.sub("<testid>", text)
    text = TIME.sub("<time>", text)
    return COMMIT.sub("commit <commit>", text)


class _Tree(HTMLParser):
    """The rendered report as a list of blocks: (kind, payload). Kinds: h1..h6, p, li, pre,
    table (payload: header cells, rows of cells). Inline code keeps its backticks, an image its
    alt text and source, so that both are compared."""

    BLOCKS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks, self.buf, self.kind = [], None, None
        self.table, self.row, self.cell, self.thead = None, None, None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.table = {"head": [], "rows": []}
        elif tag == "thead":
            self.thead = True
        elif tag == "tr" and self.table is not None:
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []
        elif tag in self.BLOCKS and self.cell is None:
            if self.buf is not None and tag in ("p", "pre"):  # a paragraph inside a list item
                self._flush()
            self.kind, self.buf = tag, []
        elif tag == "code" and self.kind != "pre":
            self._text("`")
        elif tag == "img":
            self._text(f"![{a.get('alt', '')}]({a.get('src', '')})")

    def handle_endtag(self, tag):
        if tag == "table" and self.table is not None:
            self.blocks.append(("table", self.table))
            self.table = None
        elif tag == "thead":
            self.thead = False
        elif tag == "tr" and self.row is not None:
            if self.thead:
                self.table["head"] = self.row
            else:
                self.table["rows"].append(self.row)
            self.row = None
        elif tag in ("td", "th") and self.cell is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == self.kind and self.cell is None:
            self._flush()
        elif tag == "code" and self.kind != "pre":
            self._text("`")

    def _flush(self):
        text = "".join(self.buf)
        text = text.strip("\n") if self.kind == "pre" else " ".join(text.split())
        if text:
            self.blocks.append((self.kind, text))
        self.buf, self.kind = None, None

    def _text(self, s):
        if self.cell is not None:
            self.cell.append(s)
        elif self.buf is not None:
            self.buf.append(s)

    def handle_data(self, data):
        self._text(data)


def blocks_of(text):
    html = markdown.markdown(text, extensions=["tables", "fenced_code"])
    t = _Tree()
    t.feed(html)
    t.close()
    return t.blocks


def read(arg):
    p = Path(arg)
    if p.is_dir():
        p = p / "report.md"
    if not p.is_file():
        raise BadInput(f"{arg}: no such report (a report.md or a results/report-<id>/ folder)")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{arg}: cannot read it ({e})") from e
    blocks = blocks_of(text)
    if not blocks or blocks[0][0] != "h1":
        raise BadInput(f"{arg}: not a report of scripts/report (it does not open with a '# ' title)")
    return blocks


def sections(blocks, aliases):
    """[(heading path, [blocks])]; the path is the masked headings down to this one."""
    out, path = [], []
    for kind, payload in blocks:
        if kind[0] == "h" and kind[1:].isdigit():
            level = int(kind[1:])
            path = [h for h in path if h[0] < level] + [(level, mask(payload, aliases))]
            # the report's title (h1) is a section of its own, not part of every path
            out.append((" > ".join(h[1] for h in path if h[0] > 1 or len(path) == 1), []))
        elif out:
            out[-1][1].append((kind, payload))
    return out


def numbers_agree(a, b, tol, abs_tol):
    """None when the two cells agree: the same text around their numbers, each number pair within
    the tolerance; otherwise the reason."""
    na, nb = NUMBER.findall(a), NUMBER.findall(b)
    if NUMBER.sub("#", a) != NUMBER.sub("#", b) or len(na) != len(nb):
        return "differs"
    for x, y in zip(na, nb):
        fx, fy = float(x.replace(",", "")), float(y.replace(",", ""))
        limit = max(tol * max(abs(fx), abs(fy)), abs_tol)
        if abs(fx - fy) > limit + 1e-12:
            rel = f"{(fy - fx) / abs(fx):+.1%}" if fx else "from 0"
            return f"outside the tolerance ({rel}; allowed {tol:.0%} or {abs_tol:g})"
    return None


def is_number_cell(s):
    return bool(NUMBER.search(s)) and "`" not in s


def compare_table(where, ta, tb, aliases, tol, abs_tol, col_tol=None):
    diffs = []
    ha, hb = [mask(c, aliases) for c in ta["head"]], [mask(c, aliases) for c in tb["head"]]
    if ha != hb:
        return [f"{where}: columns differ: {' | '.join(ha)}  vs  {' | '.join(hb)}"]
    exact = len(ha) > 1 and ha[1].lower() in KEY_VALUE

    # a row's label: its first cell, up to the Threads column when there is one (the
    # cross-check's rows are workload x threads)
    n = ha.index("Threads") + 1 if "Threads" in ha else 1

    def keyed(rows, al):
        seen, out = {}, {}
        for r in rows:
            r = [mask(c, al) for c in r]
            label = " / ".join(r[:n])
            seen[label] = seen.get(label, 0) + 1
            out[(label, seen[label])] = r
        return out

    ra, rb = keyed(ta["rows"], aliases), keyed(tb["rows"], ())
    la = [k[0] for k in ra]
    lb = [k[0] for k in rb]
    if sorted(la) != sorted(lb):
        only_a = [k[0] for k in ra if k not in rb]
        only_b = [k[0] for k in rb if k not in ra]
        diffs.append(f"{where}: row labels differ: only in A {only_a or '-'}, only in B {only_b or '-'}")
    for k, a in ra.items():
        b = rb.get(k)
        if b is None:
            continue
        if len(a) != len(b):
            diffs.append(f"{where}: row '{k[0]}' has {len(a)} cells vs {len(b)}")
            continue
        for col, x, y in zip(ha[n:], a[n:], b[n:]):
            if x == y:
                continue
            if exact or not (is_number_cell(x) and is_number_cell(y)):
                diffs.append(f"{where}: row '{k[0]}', {col}: '{x}' vs '{y}' (must be identical)")
            else:
                why = numbers_agree(x, y, (col_tol or {}).get(col, tol), abs_tol)
                if why:
                    diffs.append(f"{where}: row '{k[0]}', {col}: {x} vs {y}: {why}")
    return diffs


def signature(block, aliases):
    kind, payload = block
    if kind == "table":
        return ("table", tuple(mask(c, aliases) for c in payload["head"]))
    return (kind, mask(payload, aliases))


def show(block, aliases):
    kind, payload = block
    if kind == "table":
        return f"table [{' | '.join(mask(c, aliases) for c in payload['head'])}]"
    text = mask(payload, aliases)
    return f"{kind} '{text[:300]}{'...' if len(text) > 300 else ''}'"


def compare_blocks(where, xa, xb, aliases, tol, abs_tol, col_tol):
    diffs = []
    sa, sb = [signature(b, aliases) for b in xa], [signature(b, ()) for b in xb]
    sm = difflib.SequenceMatcher(a=sa, b=sb, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            for a, b in zip(xa[i1:i2], xb[j1:j2]):
                if a[0] == "table":
                    diffs += compare_table(where, a[1], b[1], aliases, tol, abs_tol, col_tol)
            continue
        # a replaced block of the same kind is one changed block; the rest is only on one side
        pa, pb = list(xa[i1:i2]), list(xb[j1:j2])
        while pa and pb and pa[0][0] == pb[0][0]:
            a, b = pa.pop(0), pb.pop(0)
            if a[0] == "table":
                diffs += compare_table(where, a[1], b[1], aliases, tol, abs_tol, col_tol)
            elif a[0] == "pre":  # a command or a version block: the lines that differ
                lines = difflib.unified_diff(mask(a[1], aliases).splitlines(), mask(b[1], ()).splitlines(),
                                             "A", "B", lineterm="", n=0)
                changed = [f"    {x}" for x in lines if not x.startswith(("---", "+++", "@@"))]
                diffs.append(f"{where}: code block changed (- A, + B):\n" + "\n".join(changed))
            else:
                diffs.append(f"{where}: {a[0]} changed:\n    A: {show(a, aliases)[len(a[0]) + 1:]}\n"
                             f"    B: {show(b, ())[len(b[0]) + 1:]}")
        diffs += [f"{where}: only in A: {show(a, aliases)}" for a in pa]
        diffs += [f"{where}: only in B: {show(b, ())}" for b in pb]
    return diffs


def compare(blocks_a, blocks_b, tol=0.5, abs_tol=0.05, aliases=(), col_tol=None):
    """The list of differences between two reports' blocks (empty: they agree). col_tol: a
    relative tolerance per column header, in place of tol."""
    diffs = []
    sa, sb = sections(blocks_a, aliases), sections(blocks_b, ())
    ha, hb = [s[0] for s in sa], [s[0] for s in sb]
    if ha != hb:
        for line in difflib.unified_diff(ha, hb, "A", "B", lineterm="", n=0):
            if not line.startswith(("---", "+++", "@@")):
                diffs.append(f"sections: {'only in A' if line[0] == '-' else 'only in B'}: {line[1:]}")
        if [h for h in ha if h in hb] != [h for h in hb if h in ha]:
            diffs.append("sections: the common sections come in another order")
    bodies_b = {}
    for h, body in sb:
        bodies_b.setdefault(h, []).append(body)
    for h, body in sa:
        if bodies_b.get(h):
            diffs += compare_blocks(h, body, bodies_b[h].pop(0), aliases, tol, abs_tol, col_tol)
    return diffs


def args_of(argv):
    ap = argparse.ArgumentParser(prog="tools/report-diff", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("a", metavar="A", help="the first report: report.md or its folder")
    ap.add_argument("b", metavar="B", help="the second report")
    ap.add_argument("--tolerance", default="0.5", metavar="REL",
                    help="relative tolerance of a figure, 0..1 (default 0.5: within 50%%)")
    ap.add_argument("--abs-tolerance", default="0.05", metavar="ABS",
                    help="absolute tolerance, for figures near 0 (default 0.05: 0.04 ms vs 0.05 ms agree)")
    ap.add_argument("--column-tolerance", action="append", default=[], metavar="COLUMN=REL",
                    help="another relative tolerance for the figures of every column headed COLUMN "
                         "(repeatable), e.g. max=0.9: the slowest event of a step is one sample")
    ap.add_argument("--alias", action="append", default=[], metavar="OLD=NEW",
                    help="read OLD in A as NEW (repeatable), e.g. a database name of each run's own")
    a = ap.parse_args(argv)
    try:
        a.tolerance = float(a.tolerance)
        if not 0 <= a.tolerance < 1:
            raise ValueError
    except ValueError:
        raise BadInput(f"--tolerance {a.tolerance}: a fraction from 0 to below 1 (0.5 is 50%)") from None
    try:
        a.abs_tolerance = float(a.abs_tolerance)
        if a.abs_tolerance < 0:
            raise ValueError
    except ValueError:
        raise BadInput(f"--abs-tolerance {a.abs_tolerance}: a number of 0 or more") from None
    aliases = []
    for s in a.alias:
        old, eq, new = s.partition("=")
        if not eq or not old:
            raise BadInput(f"--alias {s}: OLD=NEW (e.g. --alias sbtest_before=sbtest_after)")
        aliases.append((old, new))
    a.alias = aliases
    a.col_tol = {}
    for s in a.column_tolerance:
        col, eq, rel = s.rpartition("=")
        try:
            if not eq or not col or not 0 <= float(rel) < 1:
                raise ValueError
        except ValueError:
            raise BadInput(f"--column-tolerance {s}: COLUMN=REL, REL from 0 to below 1 (e.g. max=0.9)") from None
        a.col_tol[col] = float(rel)
    return a


def main(argv=None):
    try:
        a = args_of(sys.argv[1:] if argv is None else argv)
        ba, bb = read(a.a), read(a.b)
    except BadInput as e:
        print(f"report-diff: {e}", file=sys.stderr)
        return 2
    diffs = compare(ba, bb, a.tolerance, a.abs_tolerance, a.alias, a.col_tol)
    if not diffs:
        cols = "".join(f", {c} {t:.0%}" for c, t in a.col_tol.items())
        print(f"agree: {a.a} and {a.b} (same sections, tables, rows and fixed values; figures within "
              f"{a.tolerance:.0%} or {a.abs_tolerance:g}{cols})")
        return 0
    print(f"{len(diffs)} difference(s) between A={a.a} and B={a.b}:")
    for d in diffs:
        print(f"- {d}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
