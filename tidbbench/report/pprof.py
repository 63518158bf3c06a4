"""A reader of pprof's profile format (github.com/google/pprof, proto/profile.proto: a gzipped
protobuf), standard library only.

Why not a library: the report runs in .stack/venv and in the nightly image, neither of which has
Go or our k6 binary for certain, and the protobuf package would need profile.proto compiled
(protoc) or its descriptor built by hand. The wire format is small: varints, length-delimited
fields and packed repeated integers; of the message only what a CPU profile's stacks need is
read (sample types, samples, locations with their inlined lines, functions, strings, duration,
period). tests/test_profiles.py holds this reader to `go tool pprof` on a real TiDB profile.
"""
import gzip
from dataclasses import dataclass, field


class ProfileError(ValueError):
    pass


def _varint(b, i):
    x = shift = 0
    while True:
        if i >= len(b):
            raise ProfileError("truncated varint")
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        if c < 0x80:
            return x, i
        shift += 7
        if shift > 63:
            raise ProfileError("varint too long")


def _fields(b):
    """(field number, wire type, value) of a message: ints for varints, bytes for the rest."""
    i, n = 0, len(b)
    while i < n:
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            ln, i = _varint(b, i)
            if i + ln > n:
                raise ProfileError("truncated field")
            v, i = b[i:i + ln], i + ln
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ProfileError(f"wire type {wt} is not protobuf's")
        yield num, wt, v


def _ints(wt, v, out):
    """A repeated integer field's values, packed (wire type 2) or not."""
    if wt == 0:
        out.append(v)
        return
    i = 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)


def _signed(x):
    return x - (1 << 64) if x >= 1 << 63 else x


@dataclass
class Profile:
    sample_types: list  # [(type, unit)]
    samples: list  # [(stack: tuple of function names, leaf first; values: list of int)]
    duration_ns: int = 0
    period: int = 0
    period_type: tuple = ("", "")
    functions: set = field(default_factory=set)

    def value_index(self):
        """The index of CPU time (cpu/nanoseconds), else of the sample count."""
        for i, (t, u) in enumerate(self.sample_types):
            if t == "cpu" and u == "nanoseconds":
                return i
        return 0

    def total(self, index=None):
        i = self.value_index() if index is None else index
        return sum(v[i] for _, v in self.samples)

    def sample_count(self):
        """The samples: the first value counted (unit count: Go's samples/count, an older
        pprof-rs' cpu/count)."""
        for i, (_, u) in enumerate(self.sample_types):
            if u == "count":
                return self.total(i)
        return len(self.samples)


def parse(data):
    """Profile from pprof's bytes (gzipped or not)."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise ProfileError(f"not gzip: {e}") from e
    strings, types, raw_samples, locs, funcs = [], [], [], {}, {}
    duration = period = 0
    ptype = None
    for num, wt, v in _fields(data):
        if num == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif num == 1:
            d = {n: x for n, _, x in _fields(v)}
            types.append((d.get(1, 0), d.get(2, 0)))
        elif num == 2:
            ids, vals = [], []
            for n, w, x in _fields(v):
                if n == 1:
                    _ints(w, x, ids)
                elif n == 2:
                    _ints(w, x, vals)
            raw_samples.append((ids, [_signed(x) for x in vals]))
        elif num == 4:
            lid, lines = 0, []
            for n, _, x in _fields(v):
                if n == 1:
                    lid = x
                elif n == 4:
                    lines.append({a: y for a, _, y in _fields(x)}.get(1, 0))
            locs[lid] = lines
        elif num == 5:
            d = {n: x for n, _, x in _fields(v)}
            funcs[d.get(1, 0)] = d.get(2, 0)
        elif num == 10:
            duration = _signed(v)
        elif num == 12:
            period = _signed(v)
        elif num == 11:
            d = {n: x for n, _, x in _fields(v)}
            ptype = (d.get(1, 0), d.get(2, 0))
    if not types:
        raise ProfileError("no sample types: not a pprof profile")

    def s(i):
        return strings[i] if 0 <= i < len(strings) else ""
    names = {fid: s(si) for fid, si in funcs.items()}
    samples, seen = [], set()
    for ids, vals in raw_samples:
        stack = []
        for lid in ids:  # leaf first; a location's lines are innermost (inlined) first
            stack.extend(names.get(f, "?") for f in locs.get(lid, []))
        seen.update(stack)
        samples.append((tuple(stack), vals))
    return Profile([(s(t), s(u)) for t, u in types], samples, duration, period,
                   (s(ptype[0]), s(ptype[1])) if ptype else ("", ""), seen)


def read(path):
    with open(path, "rb") as f:
        return parse(f.read())
