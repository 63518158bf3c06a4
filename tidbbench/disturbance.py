"""What disturbed a sample, and the rule that calls it disturbed (issue #43), in one place: the
report (tidbbench/report/disturb.py), the plans' reruns (tidbbench/sweep/plan.py) and the
history's evidence (tidbbench/history/evidence.py) read it. Standard library only.

Each step of a run manifest has `disturbance` (k6/lib/disturb.js, k6/ext/tbs/disturb.go): over
the step's measured window the host's CPU steal and CPU pressure (PSI `some`), the database's,
k6's and the other processes' CPU, and a canary (a fixed CPU calibration, ns) timed just before
the load and just after the window. docs/report.md#disturbed-samples says why these thresholds.

A sample (one run) is disturbed when any of its steps is, by any of:
- steal above STEAL_SHARE of the window's CPU time: the hypervisor ran another guest;
- other processes' CPU above OTHER_SHARE of the window's CPU time: something beside the
  database and k6 competed for the CPUs (builds, another benchmark, a backup);
- a canary slower than the set's median canary by more than CANARY_SLOWER: the host was
  slower at the edges of the window than it was for the set's other samples.
PSI is shown but is no criterion: a benchmark that saturates the CPUs makes its own pressure.
"""
import statistics

STEAL_SHARE = 0.05
OTHER_SHARE = 0.10
CANARY_SLOWER = 0.25
RERUNS_PER_SAMPLE = 2  # a plan reruns a disturbed sample at most this often
RERUNS_PLAN_SHARE = 0.2  # and reruns at most this share of its samples in all (at least RERUNS_PER_SAMPLE)


def step_canaries(step):
    d = step.get("disturbance") or {}
    return [x for x in (d.get("canary_before_ns"), d.get("canary_after_ns")) if isinstance(x, (int, float)) and x > 0]


def canary_median(manifests):
    """The median canary (ns) over every step of the given run manifests; None without any."""
    xs = [x for m in manifests for s in m.get("steps") or [] for x in step_canaries(s)]
    return statistics.median(xs) if xs else None


def step_reasons(step, median=None):
    """Why one step is disturbed by the rule: [] when it is not (or records no disturbance)."""
    d = step.get("disturbance") or {}
    out = []
    steal = d.get("steal_share")
    if isinstance(steal, (int, float)) and steal > STEAL_SHARE:
        out.append(f"CPU steal {steal * 100:.1f}% > {STEAL_SHARE * 100:g}%")
    other = d.get("other_share")
    if isinstance(other, (int, float)) and other > OTHER_SHARE:
        out.append(f"other processes' CPU {other * 100:.1f}% > {OTHER_SHARE * 100:g}% of the host's")
    if median:
        slow = max(step_canaries(step), default=None)
        if slow is not None and slow > median * (1 + CANARY_SLOWER):
            out.append(f"canary {slow / 1e6:.1f} ms, {(slow / median - 1) * 100:+.0f}% on the median {median / 1e6:.1f} ms"
                       f" (> {CANARY_SLOWER * 100:+g}%)")
    return out


def run_reasons(manifest, median=None):
    """Why a run (one sample) is disturbed: 'N threads: reason' per disturbed step; [] when not."""
    out = []
    for s in manifest.get("steps") or []:
        out += [f"{s.get('threads')} threads: {r}" for r in step_reasons(s, median)]
    return out


def without_partner(manifest, partner):
    """A duet sample's manifest (a plan's `"duet": true`: two runs at once, tidbbench/sweep/plan.py)
    with its partner's database and k6 CPU taken out of the other processes' CPU of each step: the
    partner is the pair's own load, not a neighbour. The manifest itself is not changed; without a
    partner (or its figures) it is returned as it is. Each adjusted step's disturbance says so
    (`partner_cpu_s`)."""
    if not partner:
        return manifest
    theirs = {s.get("threads"): s.get("disturbance") or {} for s in partner.get("steps") or []}
    steps = []
    for s in manifest.get("steps") or []:
        d, p = s.get("disturbance") or {}, theirs.get(s.get("threads")) or {}
        load = [p.get("db_cpu_s"), p.get("client_cpu_s")]
        if all(isinstance(x, (int, float)) for x in [d.get("other_cpu_s"), d.get("cpu_s"), *load]) and d["cpu_s"] > 0:
            other = max(0.0, d["other_cpu_s"] - sum(load))
            s = {**s, "disturbance": {**d, "other_cpu_s": other, "other_share": other / d["cpu_s"],
                                      "partner_cpu_s": sum(load)}}
        steps.append(s)
    return {**manifest, "steps": steps}


def rerun_cap(samples):
    """The reruns a plan of `samples` samples may make in all."""
    return max(RERUNS_PER_SAMPLE, int(samples * RERUNS_PLAN_SHARE))


def pct(x):
    return "n/a" if not isinstance(x, (int, float)) else f"{x * 100:.1f}%"


def cores(cpu_s, d):
    """CPU seconds over the window as cores (CPU seconds per second)."""
    w = d.get("window_s")
    return "n/a" if not isinstance(cpu_s, (int, float)) or not w else f"{cpu_s / w:.2f}"


def ms(ns):
    return "n/a" if not isinstance(ns, (int, float)) else f"{ns / 1e6:.1f}"


def figures(step):
    """The step's disturbance as table cells: steal, PSI some, other CPU share, database cores,
    k6 cores, canary before and after (ms); None when the step records none."""
    d = step.get("disturbance")
    if not d:
        return None
    if not d.get("available", True) and d.get("why"):
        return [f"n/a ({d['why']})", "", "", "", "", ms(d.get("canary_before_ns")), ms(d.get("canary_after_ns"))]
    return [pct(d.get("steal_share")), pct(d.get("psi_some_share")), pct(d.get("other_share")),
            cores(d.get("db_cpu_s"), d), cores(d.get("client_cpu_s"), d),
            ms(d.get("canary_before_ns")), ms(d.get("canary_after_ns"))]


HEADERS = ["steal", "CPU pressure", "other CPU", "database (cores)", "k6 (cores)", "canary before (ms)",
           "canary after (ms)"]


def summary(step):
    """One short phrase of a step's disturbance, for the history's evidence."""
    d = step.get("disturbance")
    if not d or not d.get("available", True):
        return "not recorded"
    return (f"steal {pct(d.get('steal_share'))}, other CPU {pct(d.get('other_share'))}, "
            f"canary {ms(max(step_canaries(step), default=None))} ms")
