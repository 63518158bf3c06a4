"""sysbench 1.0.20's latency histogram, the one Python definition: the report and the k6 merge use
it, and anything else in Python that needs a bucket's width (FACTOR) should (k6/x/tbs is the Go
one, which records the histogram).

src/sb_histogram.c: sb_histogram_init(h, size, min, max) sets range_deduct = ln(min) and
range_mult = (size - 1) / (ln(max) - ln(min)); a value lands in bucket
floor((ln(v) - range_deduct) * range_mult + 0.5), clamped to 0..size-1, and bucket i stands for
exp(i / range_mult + range_deduct); percentiles are by nearest rank. sysbench's latency histogram
(sb_logger.c) has 1024 buckets from 0.001 to 100000 ms, so one bucket is a factor of
exp(ln(1e8) / 1023), about 1.8%, wide: the resolution of any percentile sysbench prints.
(exp(ln(1e8) / 1024) = 1e8 ** (1 / 1024) is slightly narrower and not sysbench's.)

Its constants are k6/contract.json's "latency_histogram", generated from Go (k6/ext/tbs/histogram.go,
the one definition, which k6 records with): size, range, deduct, mult, bucket_ratio. Bucket values
are computed here with exp() as before, not taken from its values_ms (Go's math.Exp differs from
the C library's in the last bit for some buckets). Standard library only: `scripts/k6 merge` runs
tidbbench.merge (which uses this module) with any python3, outside the venv."""
import json
import math

from tidbbench import ROOT

SPEC = json.loads((ROOT / "k6" / "contract.json").read_text())["latency_histogram"]
SCHEME = SPEC["scheme"]  # "sysbench"
BUCKETS = int(SPEC["buckets"])  # 1024
MIN_MS = float(SPEC["min_ms"])  # 0.001
MAX_MS = float(SPEC["max_ms"])  # 100000.0
RANGE_DEDUCT = float(SPEC["deduct"])  # ln(min)
RANGE_MULT = float(SPEC["mult"])  # (buckets - 1) / (ln(max) - ln(min))
FACTOR = float(SPEC["bucket_ratio"])  # the width ratio of one bucket, exp(1 / mult): about 1.018


def bucket(ms):
    """sb_histogram_update's bucket of a latency in ms."""
    if ms <= 0:
        return 0
    i = math.floor((math.log(ms) - RANGE_DEDUCT) * RANGE_MULT + 0.5)
    return min(max(i, 0), BUCKETS - 1)


def bucket_value(i):
    """The latency (ms) sysbench reports for bucket i."""
    return math.exp(i / RANGE_MULT + RANGE_DEDUCT)


def percentile(counts, p):
    """sb_histogram_get_pct: nearest rank over the buckets. counts: {bucket: n}."""
    total = sum(counts.values())
    if total == 0:
        return 0.0
    nmax = math.floor(total * p / 100 + 0.5)
    run = 0
    last = 0
    for i in sorted(counts):
        run += counts[i]
        last = i
        if run >= nmax:
            return bucket_value(i)
    return bucket_value(last)
