"""Run manifests (results/<testid>.json, written by k6/lib/summary.js) and sweep manifests
(results/sweep-<id>.json, written by scripts/sweep), resolved from what the user typed."""
import json
from dataclasses import dataclass, field
from pathlib import Path

from tidbbench import ReportError, contract

ID_RE = contract.testid_re()  # k6/contract.json


@dataclass
class Run:
    """One k6 run (one testid, one workload) and its manifest."""
    testid: str
    manifest: dict
    path: Path
    entry: dict = None  # the sweep manifest's entry for this run (repeat, arm, host), when in a sweep

    @property
    def workload(self):
        return self.manifest.get("workload") or self.manifest.get("options", {}).get("workload", "")

    @property
    def options(self):
        return self.manifest.get("options", {})

    @property
    def steps(self):
        return self.manifest.get("steps", [])


@dataclass
class RunSet:
    """What one RUN argument names: a single testid, or a sweep (one testid per workload)."""
    id: str
    kind: str  # "run" or "sweep"
    runs: list = field(default_factory=list)  # [Run], in the sweep's order
    sweep: dict = None  # the sweep manifest, for kind == "sweep"
    rejected: list = field(default_factory=list)  # [Run] a plan rejected as disturbed and reran (entry: why)

    def by_workload(self):
        """workload -> its first run (sample): the one the environment and commands show."""
        out = {}
        for r in self.runs:
            out.setdefault(r.workload, r)
        return out

    def samples(self):
        """workload -> [Run]: every repeat (sample) of it, in the order they ran."""
        out = {}
        for r in self.runs:
            out.setdefault(r.workload, []).append(r)
        return out

    @property
    def first(self):
        return self.runs[0]

    @property
    def product(self):
        return self.first.manifest.get("product", "")

    @property
    def version(self):
        return self.first.manifest.get("version", "")


def _read_json(path):
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ReportError(f"{path} is not valid JSON: {e}")


def load_run(results, testid, context=""):
    path = results / f"{testid}.json"
    if not ID_RE.match(testid) or not path.is_file():
        where = f" (listed by {context})" if context else ""
        raise ReportError(f"unknown testid '{testid}'{where}: there is no {path}", code=2)
    m = _read_json(path)
    if "runs" in m:
        raise ReportError(f"'{testid}' is a sweep, not a testid", code=2)
    check_run_manifest(m, path)
    return Run(testid=m.get("testid") or testid, manifest=m, path=path)


def check_run_manifest(m, path):
    if not m.get("steps"):
        raise ReportError(f"{path}: the run has no thread steps (did it fail before its first step?)", code=2)
    for s in m["steps"]:
        w = s.get("window") or {}
        if not all(isinstance(w.get(k), (int, float)) for k in ("measure_start", "measure_end")):
            raise ReportError(f"{path}: step threads={s.get('threads')} has no measured window "
                              "(window.measure_start/measure_end); it cannot be matched with Prometheus", code=2)


def resolve(results, run_id):
    """RUN -> RunSet. A testid is results/<RUN>.json; a sweep is results/<RUN>.json holding
    "runs", or results/sweep-<RUN>.json."""
    results = Path(results)
    if not ID_RE.match(run_id):
        raise ReportError(f"unknown run '{run_id}': a testid or sweep id is letters, digits, '.', '_' and '-'", code=2)
    candidates = [results / f"{run_id}.json"]
    if not run_id.startswith("sweep-"):
        candidates.append(results / f"sweep-{run_id}.json")
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        raise ReportError(f"unknown run '{run_id}': no run manifest {candidates[0]} (testid)"
                          + (f" and no sweep manifest {candidates[1]}" if len(candidates) > 1 else "")
                          + f" in {results}", code=2)
    m = _read_json(path)
    if "runs" in m:
        sweep_id = m.get("sweep") or path.stem
        if not m["runs"]:
            raise ReportError(f"sweep '{sweep_id}' ({path}) lists no runs", code=2)
        runs = [load_run(results, r["testid"], context=f"sweep '{sweep_id}'") for r in m["runs"]]
        for r, e in zip(runs, m["runs"]):
            r.entry = e
        seen = {}
        for r, e in zip(runs, m["runs"]):
            key = (r.workload, e.get("repeat", 1))
            if key in seen:
                raise ReportError(f"sweep '{sweep_id}' lists workload {r.workload} twice "
                                  f"({seen[key]} and {r.testid})", code=2)
            seen[key] = r.testid
        rejected = []
        for e in m.get("rejected") or []:  # samples a plan reran as disturbed (tidbbench/sweep/plan.py)
            if isinstance(e, dict) and (results / f"{e.get('testid')}.json").is_file():
                r = load_run(results, e["testid"], context=f"sweep '{sweep_id}' (rejected)")
                r.entry = e
                rejected.append(r)
        return RunSet(id=sweep_id, kind="sweep", runs=runs, sweep=m, rejected=rejected)
    check_run_manifest(m, path)
    return RunSet(id=run_id, kind="run", runs=[Run(testid=m.get("testid") or run_id, manifest=m, path=path)])


def is_tpcc(rs):
    """Whether a run set holds k6/tpcc.js's runs (tidbbench/report/tpcc.py lays them out)."""
    return any(r.workload == contract.TPCC for r in rs.runs)


def common_workloads(base, cand):
    """Workloads both run sets measured, in the baseline's order."""
    cw = cand.by_workload()
    common = [w for w in base.by_workload() if w in cw]
    if not common:
        raise ReportError(
            f"runs '{base.id}' (workloads: {', '.join(r.workload for r in base.runs)}) and "
            f"'{cand.id}' (workloads: {', '.join(r.workload for r in cand.runs)}) have no workload in common",
            code=2)
    return common
