"""The load generators of a report's runs: every k6 instance of a split run (its host, cores,
memory, k6, segment, the steps it finished, its exit status), a warning for each one whose k6
was CPU-saturated during a step, and a sentence for each one that did not finish.

Saturation: k6's own CPU seconds per second over a step's measured window, from Prometheus
(`increase(k6_oltp_client_cpu_seconds_total{testid, instance_id}[window])`, docs/CONTRACT.md),
or from the manifest's client_cpu_s / elapsed_s when Prometheus has no such series; at or above
SATURATED of the instance's cores (or of GOMAXPROCS, when the manifest records it) the load
generator, not the database, may have set the pace.
"""
from dataclasses import dataclass, field

from tidbbench.report.fmt import md_table
from tidbbench.merge import died_text
from tidbbench.report.prom import _fmt_at

SATURATED = 0.9


@dataclass
class Instance:
    testid: str
    id: str
    segment: str
    facts: dict
    steps: list
    exit_status: object
    status: str
    died: str = ""
    cpu: dict = field(default_factory=dict)  # threads -> (busy cores, source)


def instances_of(run):
    """[Instance] of a run: a merged run's instances, or the one process of a single run."""
    m = run.manifest
    if m.get("instances"):
        out = []
        for e in m["instances"]:
            out.append(Instance(run.testid, str(e["id"]), e.get("segment", ""), e.get("load_generator") or {},
                                list(e.get("steps_completed") or []), e.get("exit_status"), e.get("status", ""),
                                died_text(e) if e.get("status") != "complete" else ""))
        return out
    inst = m.get("instance") or {}
    return [Instance(run.testid, str(inst.get("id", "0")), inst.get("segment") or "0:1", m.get("load_generator") or {},
                     [s["threads"] for s in run.steps if not s.get("interrupted")], None, "complete")]


def usable_cores(facts):
    cores = facts.get("cpu_cores")
    g = facts.get("gomaxprocs")
    if isinstance(g, (int, float)) and g > 0 and (not cores or g < cores):
        return g
    return cores


def cpu_busy(prom, run, insts):
    """Fills Instance.cpu per step: k6 CPU seconds per second in the step's measured window."""
    by_id = {i.id: i for i in insts}
    for step in run.steps:
        w = step.get("window") or {}
        if "measure_start" not in w or "measure_end" not in w:
            continue
        secs = (w["measure_end"] - w["measure_start"]) / 1000.0
        if secs <= 0:
            continue
        expr = (f'sum by (instance_id) (increase(k6_oltp_client_cpu_seconds_total{{testid="{run.testid}"}}'
                f'[{int(secs * 1000)}ms]))')
        try:
            res = prom.query(expr, _fmt_at(int(w["measure_end"])))
        except Exception:  # an old Prometheus or no data: the manifest's figure below
            res = []
        for r in res:
            inst = by_id.get(str(r["metric"].get("instance_id", "0")))
            if inst is not None and step["threads"] in inst.steps:
                inst.cpu[step["threads"]] = (float(r["value"][1]) / secs, "Prometheus")
    # the manifest's own figure where Prometheus had none
    m = run.manifest
    if m.get("instances"):
        for e in m["instances"]:
            inst = by_id.get(str(e["id"]))
            for t, c in (e.get("client_cpu_s") or {}).items():
                step = next((s for s in run.steps if str(s["threads"]) == str(t)), None)
                if inst is not None and step and int(t) not in inst.cpu and step.get("elapsed_s"):
                    inst.cpu[int(t)] = (c / step["elapsed_s"], "k6 summary")
    elif insts:
        for s in run.steps:
            if s.get("client_cpu_s") is not None and s.get("elapsed_s") and s["threads"] not in insts[0].cpu:
                insts[0].cpu[s["threads"]] = (s["client_cpu_s"] / s["elapsed_s"], "k6 summary")


def collect(prom, runs):
    """-> (instances by testid, warnings)."""
    out, warnings = {}, []
    for run in runs:
        insts = instances_of(run)
        cpu_busy(prom, run, insts)
        out[run.testid] = insts
        for i in insts:
            cores = usable_cores(i.facts)
            for t, (busy, src) in sorted(i.cpu.items()):
                if cores and busy >= SATURATED * cores:
                    warnings.append(
                        f"load generator saturated: {run.workload} (testid {run.testid}), instance {i.id} on "
                        f"{i.facts.get('hostname') or 'an unrecorded host'}: k6 used {busy:.2f} CPU seconds per "
                        f"second of its {cores} core(s) ({busy / cores * 100:.0f}%, {src}) during the {t}-thread "
                        f"step; that step's figures may be the load generator's limit, not the database's")
            if i.died:
                warnings.append(f"{run.workload} (testid {run.testid}): {i.died}")
    return out, warnings


def markdown(loadgens, warnings):
    """Lines for the report's Load generator section: the instances of split runs (a single
    process is the table above it) and the warnings."""
    lines = []
    split = {t: insts for t, insts in loadgens.items() if len(insts) > 1 or any(i.died for i in insts)}
    if split:
        lines.append("Each split run's k6 instances (one run on k6 execution segments; every figure of a step sums "
                 "the instances that finished it):")
        lines.append("")
        rows = []
        for testid, insts in split.items():
            for i in insts:
                f = i.facts
                cpu = ", ".join(f"{t}: {b:.2f}" for t, (b, _) in sorted(i.cpu.items())) or "—"
                rows.append([testid, i.id, i.segment, f.get("hostname") or "not recorded",
                             str(f.get("cpu_cores") or "not recorded"),
                             f"{f['memory_gib']} GiB" if f.get("memory_gib") not in (None, "") else "not recorded",
                             f.get("k6") or "not recorded", ", ".join(map(str, i.steps)) or "none",
                             "unknown" if i.exit_status is None else str(i.exit_status), cpu])
        lines.append(md_table(["testid", "instance", "segment", "host", "cores", "memory", "k6", "steps finished",
                           "exit status", "k6 CPU s/s per step"], rows))
        lines.append("")
    for w in warnings:
        lines.append(f"> **Warning:** {w}")
        lines.append("")
    return lines
