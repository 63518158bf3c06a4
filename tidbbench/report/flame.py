"""Flame graphs as SVG, made here from a profile's stacks (no library: the layout is a few lines,
and the report then needs nothing beyond the standard library to draw them).

A graph is an icicle: the root (all of the step's CPU) at the top, callees below their callers,
each frame as wide as its share of CPU. `tree()` builds it from stacks; `svg()` draws one side
(colour by package) or, given a baseline, the difference (width: the larger side's CPU per
query; colour: red where the frame's CPU per query grew, blue where it shrank, the deeper the
larger the change against the frame's own). Every frame has a <title>, which a browser shows on
hover when the SVG is opened on its own."""
import hashlib
import html

ROW = 17  # px per frame
WIDTH = 1100
MIN_PX = 0.5  # frames narrower than this are not drawn (their width stays in the parent's)


class Node:
    __slots__ = ("name", "value", "base", "children")

    def __init__(self, name):
        self.name = name
        self.value = 0.0
        self.base = 0.0
        self.children = {}

    def child(self, name):
        c = self.children.get(name)
        if c is None:
            c = self.children[name] = Node(name)
        return c


def tree(stacks, scale=1.0, root=None, base=False):
    """The call tree of [(stack leaf first, value)], each value times `scale`, added to `root`
    (a new one when None): as the base side's values when `base`."""
    root = root or Node("all")
    for stack, v in stacks:
        v *= scale
        n = root
        for name in (root, *reversed(stack)):
            n = name if isinstance(name, Node) else n.child(name)
            if base:
                n.base += v
            else:
                n.value += v
    return root


def package_of(name):
    """A Go function's package: github.com/pingcap/tidb/pkg/executor.(*X).Next ->
    github.com/pingcap/tidb/pkg/executor; runtime.mallocgc -> runtime."""
    slash = name.rfind("/")
    dot = name.find(".", slash + 1)
    return name[:dot] if dot > 0 else name


def _colour(name):
    h = int(hashlib.md5(package_of(name).encode()).hexdigest()[:6], 16)
    return f"rgb({205 + h % 50},{90 + (h >> 8) % 120},{40 + (h >> 16) % 50})"


def _diff_colour(n):
    a, b = n.base, n.value
    big = max(a, b)
    if big <= 0:
        return "rgb(220,220,220)"
    d = (b - a) / big  # -1 .. 1
    k = int(200 * min(1.0, abs(d) * 2))  # +-50% of the frame is the deepest colour
    if k == 0:
        return "rgb(235,235,235)"
    return f"rgb(255,{235 - k},{235 - k})" if d > 0 else f"rgb({235 - k},{235 - k},255)"


def _fmt(x):
    return f"{x:,.2f}" if x < 100 else f"{x:,.0f}"


def _title(n, diff, unit):
    if not diff:
        return f"{n.name}: {_fmt(n.value)} {unit}"
    ch = f"{(n.value / n.base - 1) * 100:+.1f}%" if n.base > 0 else "new"
    return f"{n.name}: {_fmt(n.base)} -> {_fmt(n.value)} {unit} ({ch})"


def svg(root, title, unit="µs/query", diff=False):
    """The SVG text of a tree: one side (diff=False) or the difference of `value` (candidate)
    against `base` (baseline)."""
    size = (lambda n: max(n.value, n.base)) if diff else (lambda n: n.value)
    total = size(root)
    rects, depth = [], 0
    stack = [(root, 0.0, 0)]
    while stack:
        n, x, d = stack.pop()
        w = size(n) / total * WIDTH if total > 0 else 0
        if w < MIN_PX:
            continue
        depth = max(depth, d)
        y = 24 + d * ROW
        fill = _diff_colour(n) if diff else _colour(n.name)
        label = n.name if w > 40 else ""
        chars = int(w / 6.5)
        if label and len(label) > chars:
            label = label[:max(0, chars - 2)] + ".."
        rects.append(f'<g><title>{html.escape(_title(n, diff, unit))}</title>'
                     f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{ROW - 1}" fill="{fill}" rx="2"/>'
                     + (f'<text x="{x + 3:.1f}" y="{y + 12}">{html.escape(label)}</text>' if label else "") + "</g>")
        cx = x
        for c in sorted(n.children.values(), key=lambda c: c.name):
            stack.append((c, cx, d + 1))
            cx += size(c) / total * WIDTH if total > 0 else 0
    height = 24 + (depth + 1) * ROW + 8
    legend = (' <tspan fill="#c00">red: grew</tspan>, <tspan fill="#00c">blue: shrank</tspan> per query'
              if diff else "")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans Mono, monospace" font-size="11">'
            f'<rect width="100%" height="100%" fill="#fff"/>'
            f'<text x="4" y="15" font-size="13">{html.escape(title)}{legend}</text>'
            + "".join(rects) + "</svg>\n")
