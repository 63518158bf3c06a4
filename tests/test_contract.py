"""Issue 10: the Python side reads the shared contract instead of keeping copies:
k6/contract.json (workloads, options, the testid rule, timing) and contract/promql.json (the
per-step PromQL)."""
import importlib.util
import json
import re

import pytest

from conftest import ROOT

from tidbbench import ReportError, commands, contract
from tidbbench.report import fmt, manifest, prom
from tidbbench.gen import docs as gen_docs
from tidbbench.sweep import plan, sweep

pytestmark = pytest.mark.fast

C = json.loads((ROOT / "k6/contract.json").read_text())
Q = json.loads((ROOT / "contract/promql.json").read_text())


def test_workloads_options_and_testid_rule_are_the_contracts():
    assert sweep.WORKLOADS == list(C["workloads"]) and sweep.WORKLOADS
    assert commands.DEFAULTS == {k: v["default"] for k, v in C["options"].items()}
    assert manifest.ID_RE.pattern == C["testid"]["pattern"]
    # every workload has a seed-style title of its own; a declared title wins over the name's
    titles = [fmt.workload_name(w) for w in C["workloads"]]
    assert len(set(titles)) == len(titles), titles
    assert fmt.workload_name("oltp_update_non_index") == C["workloads"]["oltp_update_non_index"]["title"]
    # the option workload's valid values are the declared workloads, kept nowhere else
    assert "valid" not in C["options"]["workload"] and contract.valid("workload") == list(C["workloads"])


def test_the_testid_limit_is_the_contracts_everywhere(tmp_path):
    n = C["testid"]["max_length"]
    ok, too_long = "a" * n, "a" * (n + 1)
    assert manifest.ID_RE.match(ok) and not manifest.ID_RE.match(too_long)
    with pytest.raises(ReportError, match="a testid or sweep id"):
        manifest.resolve(tmp_path, too_long)
    # the sweep's testids are <id>-<workload>: an id that makes one too long is refused up front
    base = "s" * (n - len("-oltp_point_select") + 1)
    with pytest.raises(ReportError, match=f"at most {n}"):
        sweep.parse_args(["--workloads", "oltp_point_select", "--threads", "2", "--id", base])
    sweep.parse_args(["--workloads", "oltp_point_select", "--threads", "2", "--id", base[:-1]])


class Recorder:
    """A Prometheus that records the queries it is asked and answers one sample."""
    def __init__(self):
        self.url, self.queries = "http://recorder", []

    def query(self, expr, at):
        self.queries.append((expr, at))
        return [{"metric": {}, "value": [float(at), "10"]}]


def test_step_queries_are_the_contracts_templates():
    step = {"threads": 4, "window": {"measure_start": 1_000_000, "measure_end": 1_010_000}}
    rec = Recorder()
    fig = prom.step_figures(rec, "run-x", step)
    t = C["timing"]
    grace_s = C["options"]["grace_time"]["default"]  # a window without step_end: the option's default
    tail_s = t["push_interval_s"] + grace_s + Q["step"]["eval_after_measure_end"]["slack_s"]
    at = f"{(1_010_000 + tail_s * 1000) / 1000:.3f}"
    rng = f"{1_010_000 + tail_s * 1000 - 1_000_000}ms"
    sel = 'testid="run-x",threads="4",warmup="false"'
    want = {q.replace("<SEL>", sel).replace("<RANGE>", rng).replace("<BY>", "").replace("<Q>", "0.95")
            for q in Q["step"]["queries"].values()}
    assert {e for e, _ in rec.queries} == want
    assert {a for _, a in rec.queries} == {at}
    assert fig.queries == 10 and fig.qps == 1.0


def test_a_grouped_query_for_a_table_of_steps():
    q = contract.step_query("quantile", "testid=\"$run\"", "$__range", 0.95, " by (threads) ")
    assert q == 'histogram_quantile(0.95, sum by (threads) (last_over_time(k6_oltp_latency_seconds{testid="$run"}[$__range])))'


TOY = '    "oltp_toy": {"trx": true, "event": ["point_selects", "index_updates"], "tables_after": "sum_k"},'


def test_adding_a_workload_follows_the_recipe(tmp_path, monkeypatch):
    """docs/ARCHITECTURE.md's "Adding a workload", applied to a copy of k6/contract.json (one line;
    k6/jstest's TestAddingAWorkloadFollowsTheRecipe applies the same line for the k6 side): the
    sweep and the plans take it, docs/options.md's generator lists it, the report titles it, the
    parity tests compare it with sysbench by its declared tables_after."""
    text = (ROOT / "k6/contract.json").read_text()
    anchor = '  "workloads": {\n'
    assert text.count(anchor) == 1
    toy = tmp_path / "contract.json"
    toy.write_text(text.replace(anchor, anchor + TOY + "\n", 1))
    monkeypatch.setattr(contract, "CONTRACT", toy)
    contract.contract.cache_clear()
    try:
        assert contract.workloads()[0] == "oltp_toy" and contract.valid("workload")[0] == "oltp_toy"
        sweep.parse_args(["--workloads", "oltp_toy,oltp_read_write", "--threads", "2"])
        with pytest.raises(ReportError, match="valid: oltp_toy, oltp_point_select"):
            sweep.parse_args(["--workloads", "oltp_toys", "--threads", "2"])
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps({"workloads": ["oltp_toy"], "threads": [2], "arms": [{"name": "a"}, {"name": "b"}]}))
        assert plan.load(plan_file)["workloads"] == ["oltp_toy"]
        assert fmt.workload_name("oltp_toy") == "Toy"
        doc_table = gen_docs.table(contract.contract())
        assert "(`oltp_toy`, `oltp_point_select`," in doc_table
        assert gen_docs.table(C) != doc_table  # the generated page changes: the recipe's second file
        spec = importlib.util.spec_from_file_location("parity_for_recipe", ROOT / "tests/test_parity.py")
        parity = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(parity)
        assert ("oltp_toy", {}, "sum_k") in parity.CASES
    finally:
        contract.contract.cache_clear()


def test_the_connect_phase_is_the_runs_in_every_python_reader(monkeypatch):
    # connect_time=auto: timing.connect_s + connect_s_per_1000_threads per 1000 threads, rounded
    # up to whole seconds as k6/lib/steps.js has it (k6/jstest/steps_test.go holds the two equal).
    # tools/tbstools/drive.py once dropped the ceiling: 2.03 s for 4 threads where the run waits 3 s
    from tbstools import benchscale, drive
    monkeypatch.delenv("connect_time", raising=False)
    t = C["timing"]
    for threads in (1, 4, 125, 126, 1000, 1500):
        want = t["connect_s"] - (-threads * t["connect_s_per_1000_threads"] // 1000)
        assert contract.connect_seconds(threads) == want
        assert drive.connect_s(threads) == want, threads
        assert benchscale.connect_phase_ms(threads) == want * 1000, threads
    assert drive.connect_s(4) == 3
    monkeypatch.setenv("connect_time", "7")
    assert drive.connect_s(4) == contract.connect_seconds(1500) == 7
    assert gen_docs.connect_examples(t) == "3 s up to 125 threads, 4 s up to 250 threads, 10 s at 1,000"


def test_the_results_folder_is_decided_in_one_place(monkeypatch):
    # option results_dir from the environment (what k6 and the launcher read), else the contract's
    # default in the checkout: every Python command's --results default is this
    monkeypatch.delenv("results_dir", raising=False)
    assert contract.results_dir() == ROOT / C["options"]["results_dir"]["default"]
    monkeypatch.setenv("results_dir", "/elsewhere/res")
    assert str(contract.results_dir()) == "/elsewhere/res"
    from tidbbench.report import cli as report_cli
    assert report_cli.parser().parse_args(["TESTID"]).results == "/elsewhere/res"


def test_the_gotpc_release_is_one():
    """Issue #46: k6/go.mod links go-tpc, scripts/lib/versions.sh builds its CLI for the parity tests
    (tests/test_tpcc.py), k6/ext/tbs/tpcc.go names it in the manifest: one release."""
    gomod = re.search(r"github.com/pingcap/go-tpc (v\S+)", (ROOT / "k6/go.mod").read_text()).group(1)
    sh = re.search(r"^GOTPC_VERSION=(\S+)", (ROOT / "scripts/lib/versions.sh").read_text(), re.M).group(1)
    go = re.search(r'GoTpcVersion = "(\S+)"', (ROOT / "k6/ext/tbs/tpcc.go").read_text()).group(1)
    assert gomod == sh == go
    assert C["options"]["tpcc_command"]["valid"] == ["prepare", "run", "check", "cleanup"]
