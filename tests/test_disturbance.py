"""What disturbed a sample (issue #43, items 1 and 3), server-free: the rule of
tidbbench/disturbance.py (steal, the other processes' CPU, the canary against the set's median),
the report's table of every sample's disturbance with the samples a plan rejected, the note of a
disturbed step, the headline of a comparison across host classes, the plan's reruns of a disturbed
sample (k6 stood in for by a function that writes the manifest a run would), and the history's
evidence saying whether the host was disturbed on either side of a change point."""
import json
import types

import pytest

from tidbbench import disturbance
from tidbbench.report import differs, disturb
from tidbbench.report.manifest import resolve

pytestmark = pytest.mark.fast


def dist(steal=0.001, other=0.02, before=11e6, after=11.2e6, db=True):
    return {"available": True, "window": [0, 10_000], "window_s": 10, "cpus": 2, "cpu_s": 20, "busy_cpu_s": 15,
            "steal_share": steal, "psi_some_share": 0.4, "client_cpu_s": 5.0,
            "db_cpu_s": 9.6 if db else None, "other_cpu_s": other * 20 if db else None,
            "other_share": other if db else None, "canary_before_ns": before, "canary_after_ns": after,
            "canary_repeats": 3, "canary_work": "w"}


def manifest(testid, steps, lg=None):
    return {"testid": testid, "workload": "oltp_point_select", "product": "tidb", "version": "v8",
            "run_start": 1_000, "run_end": 20_000, "options": {"workload": "oltp_point_select", "time": 10},
            "load_generator": lg or {"cpu_model": "EPYC", "cpu_cores": 2, "memory_gib": 8},
            "steps": [{"threads": t, "qps": 1000.0, "window": {"measure_start": 1000, "measure_end": 11000},
                       **({"disturbance": d} if d else {})} for t, d in steps]}


def test_the_rule_names_steal_other_cpu_and_a_slow_canary_and_nothing_else():
    quiet = {"disturbance": dist()}
    assert disturbance.step_reasons(quiet, 11e6) == []
    assert disturbance.step_reasons({"disturbance": dist(steal=0.06)}, 11e6) == ["CPU steal 6.0% > 5%"]
    assert disturbance.step_reasons({"disturbance": dist(steal=0.05)}, 11e6) == []  # at the threshold: not above
    assert disturbance.step_reasons({"disturbance": dist(other=0.15)}, 11e6) == \
        ["other processes' CPU 15.0% > 10% of the host's"]
    # the slower of the two canaries against the median: 14 ms is +27% on 11 ms
    slow = disturbance.step_reasons({"disturbance": dist(after=14e6)}, 11e6)
    assert len(slow) == 1 and slow[0].startswith("canary 14.0 ms, +27% on the median 11.0 ms"), slow
    assert disturbance.step_reasons({"disturbance": dist(after=13.7e6)}, 11e6) == []  # +24.5%
    # no median (a set without canaries), no database: only what was measured is judged
    assert disturbance.step_reasons({"disturbance": dist(after=99e6, db=False)}, None) == []
    assert disturbance.step_reasons({}, 11e6) == []
    assert disturbance.canary_median([manifest("a", [(1, dist(before=10e6, after=12e6)), (2, dist(before=30e6, after=11e6))])]) \
        == pytest.approx(11.5e6)
    assert disturbance.rerun_cap(5) == 2 and disturbance.rerun_cap(30) == 6


def write_sweep(res, name, runs, rejected=(), lg=None):
    res.mkdir(exist_ok=True)
    entries = []
    for k, (tid, steps) in enumerate(runs, 1):
        (res / f"{tid}.json").write_text(json.dumps(manifest(tid, steps, lg)))
        entries.append({"workload": "oltp_point_select", "testid": tid, "repeat": k})
    rej = []
    for tid, steps, why in rejected:
        (res / f"{tid}.json").write_text(json.dumps(manifest(tid, steps, lg)))
        rej.append({"workload": "oltp_point_select", "testid": tid, "repeat": 1, "rejected": why})
    (res / f"sweep-{name}.json").write_text(json.dumps({"sweep": f"sweep-{name}", "runs": entries, "rejected": rej}))
    return resolve(res, f"sweep-{name}")


def test_the_report_shows_every_samples_disturbance_and_the_rejected_ones_with_why(tmp_path):
    s = write_sweep(tmp_path / "r", "a", [("a-r1", [(2, dist())]), ("a-r2", [(2, dist(other=0.3))]),
                                          ("a-r3", [(2, dist(before=10.9e6))])],
                    rejected=[("a-r1-x0", [(2, dist(steal=0.2))], "2 threads: CPU steal 20.0% > 5%")])
    assert [r.testid for r in s.runs] == ["a-r1", "a-r2", "a-r3"]  # the statistics' samples: the rejected one is not
    lines = "\n".join(disturb.sample_table([s], ["TiDB v8"], False, ["oltp_point_select"])).splitlines()
    rows = {r.split(" | ")[0].strip("| "): r for r in lines if r.startswith("| a-")}
    assert rows.keys() == {"a-r1", "a-r2", "a-r3", "a-r1-x0"}
    cells = [c.strip() for c in rows["a-r1"].strip("|").split("|")]
    assert cells == ["a-r1", "2", "0.1%", "40.0%", "2.0%", "0.96", "0.50", "11.0", "11.2", ""]
    assert "disturbed: 2 threads" not in rows["a-r2"] and "disturbed: other processes' CPU 30.0% > 10%" in rows["a-r2"]
    assert "rejected, rerun: 2 threads: CPU steal 20.0% > 5%" in rows["a-r1-x0"]
    # the workload's disturbance note names the disturbed step of its first sample by the same rule
    notes = disturb.step_notes(s.runs[1], [], disturbance.canary_median([r.manifest for r in s.runs]))
    assert notes == ["2 threads, the host was disturbed (other processes' CPU 30.0% > 10% of the host's)"]
    # runs of a build without the disturb VU: no table, no note
    old = write_sweep(tmp_path / "o", "o", [("o-r1", [(2, None)])])
    assert disturb.sample_table([old], ["x"], False, ["oltp_point_select"]) == []


def test_a_comparison_across_host_classes_says_so_first(tmp_path):
    a = write_sweep(tmp_path / "r", "a", [("a-r1", [(2, dist())])])
    b = write_sweep(tmp_path / "r", "b", [("b-r1", [(2, dist())])], lg={"cpu_model": "Xeon", "cpu_cores": 4,
                                                                       "memory_gib": 8, "hostname": "other"})
    lines = differs.hardware([a, b], ["A", "B"])
    assert lines[0].startswith("> **Different hardware:** B and A ran on different host classes (CPU EPYC against "
                               "Xeon; cores 2 against 4)"), lines
    # another host of the same class (only the hostname differs) is no hardware difference
    c = write_sweep(tmp_path / "r", "c", [("c-r1", [(2, dist())])], lg={"cpu_model": "EPYC", "cpu_cores": 2,
                                                                       "memory_gib": 8, "hostname": "other"})
    assert differs.hardware([a, c], ["A", "C"]) == []


class FakeSweep:
    """Stands in for tidbbench.sweep.sweep.run_sample: writes the manifest a run would, with the
    disturbance given per call in order."""

    def __init__(self, res, disturbances):
        self.res, self.queue, self.calls = res, list(disturbances), []

    def __call__(self, entry, *args, **kw):
        self.calls.append(entry["testid"])
        (self.res / f"{entry['testid']}.json").write_text(json.dumps(manifest(entry["testid"], [(2, self.queue.pop(0))])))


def plan_run(tmp_path, monkeypatch, disturbances, reruns=None, repeats=10):
    from tidbbench.sweep import plan as planmod
    fake = FakeSweep(tmp_path, disturbances)
    monkeypatch.setattr(planmod.sw, "run_sample", fake)
    monkeypatch.setattr(planmod.sw, "save_json", lambda p, d: p.write_text(json.dumps(d)))
    r = planmod.PlanRun.__new__(planmod.PlanRun)
    r.plan = {"workloads": ["oltp_point_select"], "threads": [2], "arms": [{"name": "a"}, {"name": "b"}],
              **({"reruns": reruns} if reruns is not None else {})}
    r.repeats, r.names, r.arms = repeats, ["a", "b"], {"a": {"name": "a"}, "b": {"name": "b"}}
    r.results, r.base, r.ppath = tmp_path, "p", tmp_path / "plan-p.json"
    r.state, r.sweeps, r.targets = {"order": []}, {"a": {"runs": []}, "b": {"runs": []}}, {}
    flags = types.SimpleNamespace(reset=False, analyze=False, prepare_threads=4)
    return r, fake, flags


def test_a_disturbed_sample_is_rerun_and_kept_as_rejected_up_to_the_limit(tmp_path, monkeypatch):
    # 10 rounds x 2 arms: a plan-wide cap of 4 reruns, not reached here
    r, fake, flags = plan_run(tmp_path, monkeypatch, [dist(), dist(steal=0.3), dist(), dist(other=0.5),
                                                      dist(other=0.5), dist(other=0.5)])
    r.run_sample("a", "oltp_point_select", 1, "p-a-r1", flags)  # quiet: accepted at once
    r.run_sample("a", "oltp_point_select", 2, "p-a-r2", flags)  # stolen, then quiet: one rerun
    assert fake.calls == ["p-a-r1", "p-a-r2", "p-a-r2-x1"]
    runs = r.sweeps["a"]["runs"]
    assert [e["testid"] for e in runs] == ["p-a-r1", "p-a-r2-x1"] and runs[1]["sample"] == "p-a-r2"
    [rej] = r.sweeps["a"]["rejected"]
    assert rej["testid"] == "p-a-r2" and rej["rejected"] == "2 threads: CPU steal 30.0% > 5%"
    # disturbed every time: 2 reruns (the limit per sample), then the third run is kept, marked
    r.run_sample("b", "oltp_point_select", 1, "p-b-r1", flags)
    assert fake.calls[3:] == ["p-b-r1", "p-b-r1-x1", "p-b-r1-x2"]
    kept = r.sweeps["b"]["runs"][-1]
    assert kept["testid"] == "p-b-r1-x2" and kept["disturbed"].startswith("2 threads: other processes' CPU 50.0%")
    assert [x["testid"] for x in r.state["rejected"]] == ["p-a-r2", "p-b-r1", "p-b-r1-x1"]


def test_reruns_stop_at_the_plan_wide_cap_and_reruns_0_turns_them_off(tmp_path, monkeypatch):
    # 5 rounds x 2 arms = 10 samples: at most max(2, 10 x 0.2) = 2 reruns in all, whatever `reruns` allows
    r, fake, flags = plan_run(tmp_path, monkeypatch, [dist(steal=0.3)] * 5, reruns=9, repeats=5)
    r.run_sample("a", "oltp_point_select", 1, "p-a-r1", flags)  # 2 reruns: the cap is reached
    r.run_sample("b", "oltp_point_select", 1, "p-b-r1", flags)  # disturbed, but no rerun is left
    assert fake.calls == ["p-a-r1", "p-a-r1-x1", "p-a-r1-x2", "p-b-r1"]
    assert r.sweeps["b"]["runs"][0]["disturbed"]
    off = tmp_path / "off"
    off.mkdir()
    r, fake, flags = plan_run(off, monkeypatch, [dist(steal=0.3)], reruns=0)
    r.run_sample("a", "oltp_point_select", 1, "p-a-r1", flags)
    assert fake.calls == ["p-a-r1"] and "rejected" not in r.sweeps["a"]


def test_the_history_says_whether_the_host_was_disturbed_on_either_side(tmp_path):
    from tidbbench.history import evidence
    from tidbbench.report.manifest import Run
    mk = lambda tid, d: Run(testid=tid, manifest=manifest(tid, [(4, d)]), path=tmp_path / f"{tid}.json")  # noqa: E731
    quiet = [(mk(f"q{k}", dist()), None) for k in range(3)]
    it = evidence.host_item(mk("b", dist()), mk("a", dist(other=0.4)), 4, quiet, quiet)
    assert it["disturbed"] and it["detail"] == "the run after was disturbed (other processes' CPU 40.0% > 10% of the host's)"
    assert evidence.line(it).startswith("host disturbance at 4 threads: the run after was disturbed")
    it = evidence.host_item(mk("b", dist()), mk("a", dist()), 4, quiet, quiet)
    assert not it["disturbed"] and it["detail"] == "neither side was disturbed by the rule"
    assert it["before"] == "steal 0.1%, other CPU 2.0%, canary 11.2 ms"
    it = evidence.host_item(mk("b", None), mk("a", None), 4, [], [])
    assert it["detail"].startswith("not recorded on either side")


def test_the_history_indexes_a_plans_reruns_not_the_samples_it_rejected(tmp_path):
    from tidbbench.history import store
    res = tmp_path / "r"
    write_sweep(res, "p-a", [("p-a-r1-x1", [(2, dist())]), ("p-a-r2", [(2, dist())])],
                rejected=[("p-a-r1", [(2, dist(steal=0.3))], "2 threads: CPU steal 30.0% > 5%")])
    conn = store.connect(tmp_path / "h.sqlite", create=True)
    got = store.ingest(conn, [res])
    keys = sorted(r[0] for r in conn.execute("SELECT run_key FROM runs"))
    assert keys == ["p-a-r1-x1", "p-a-r2"], keys
    assert got.skipped == 1 and got.notes == ["skipped p-a-r1.json: sweep-p-a rejected it as disturbed "
                                              "(2 threads: CPU steal 30.0% > 5%) and reran it"], got.notes


def test_history_quality_measures_with_and_without_the_disturbed_runs(tmp_path, capsys):
    from tbstools import historyquality
    res = tmp_path / "aa"
    res.mkdir()
    for k in range(7):
        m = manifest(f"haa-{k}", [(2, dist(other=0.5) if k in (2, 5) else dist())])
        m["run_start"] = 1000 + k
        m["steps"][0]["qps"] = 1000.0 + k
        (res / f"haa-{k}.json").write_text(json.dumps(m))
    assert historyquality.pool(res, "qps", 2) == [1000.0 + k for k in range(7)]
    assert historyquality.pool(res, "qps", 2, reject_disturbed=True) == [1000.0, 1001.0, 1003.0, 1004.0, 1006.0]
    assert "2 disturbed step(s) left out" in capsys.readouterr().out
