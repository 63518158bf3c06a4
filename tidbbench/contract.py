"""The shared contract, read, never copied: k6/contract.json (options, defaults, workloads, the
testid rule, timing; k6/lib/config.js reads the same file) and contract/promql.json (the
per-step PromQL)."""
import functools
import json
import os
import re
from pathlib import Path

from tidbbench import ROOT

CONTRACT = ROOT / "k6" / "contract.json"
PROMQL = ROOT / "contract" / "promql.json"
# k6/tpcc.js: the workload its run manifests name (docs/tpcc.md), and the script a plan runs for it
TPCC = "tpcc"
TPCC_SCRIPT = "k6/tpcc.js"


@functools.lru_cache(maxsize=None)
def contract():
    return json.loads(CONTRACT.read_text())


@functools.lru_cache(maxsize=None)
def promql():
    return json.loads(PROMQL.read_text())


def options():
    """name -> {type, default, help, group[, valid]}, in the contract's order."""
    return contract()["options"]


def defaults():
    """name -> default value, in the contract's order."""
    return {k: v["default"] for k, v in options().items()}


def workloads():
    """The workloads' names, in the contract's order."""
    return list(contract()["workloads"])


def workload(name):
    """A workload's declaration (event parts, trx, counts, single_table, tables_after, title);
    {} for a name the contract does not declare."""
    return dict(contract()["workloads"].get(name, {}))


def valid(name, c=None):
    """Option `name`'s valid values: its own list, or for the option workload the declared
    workloads; None when any value of its type goes."""
    c = c or contract()
    o = c["options"][name]
    if o["type"] == "workload":
        return list(c["workloads"])
    return o.get("valid")


def results_dir():
    """The results folder, decided here for every Python reader: option results_dir from the
    environment (the name k6 and the launcher read it by; scripts/k6 sets it to the checkout's
    results/), else the contract's default in the checkout."""
    return Path(os.environ.get("results_dir") or ROOT / options()["results_dir"]["default"])


def read_only_workloads():
    """The workloads that leave the tables as they were (the contract's tables_after: unchanged)."""
    return {name for name, spec in contract()["workloads"].items() if spec.get("tables_after") == "unchanged"}


def timing():
    return dict(contract()["timing"])


def connect_seconds(threads, connect_time=None, timing_=None):
    """The connect phase of a thread step of `threads` threads, in whole seconds: option
    connect_time (given, else the environment k6 reads it from, else the contract's default), or
    with `auto` timing.connect_s + connect_s_per_1000_threads per 1000 threads, rounded up. The
    run's own copy is k6/lib/steps.js connectSeconds (JavaScript cannot import this);
    k6/jstest/steps_test.go holds the two equal. timing_: another contract's timing (the docs
    generator's)."""
    given = str(connect_time if connect_time is not None
                else os.environ.get("connect_time") or options()["connect_time"]["default"]).strip()
    if given != "auto":
        return int(given)
    t = timing_ or timing()
    return int(t["connect_s"]) - (-threads * int(t["connect_s_per_1000_threads"]) // 1000)


@functools.lru_cache(maxsize=None)
def testid_re():
    return re.compile(contract()["testid"]["pattern"])


def testid_max():
    return int(contract()["testid"]["max_length"])


def step_tail_ms(window=None):
    """How long after a step's measure_end its last sample is surely in Prometheus: its
    graceful stop (the window's step_end, or option grace_time's default for manifests without
    it), then the contract's push interval and slack."""
    spec = promql()["step"]["eval_after_measure_end"]
    t = timing()
    w = window or {}
    grace_ms = (w["step_end"] - w["measure_end"]) if "step_end" in w and "measure_end" in w \
        else float(options()["grace_time"]["default"]) * 1000
    return int(grace_ms + (sum(float(t[k]) for k in spec["timing"]) + float(spec["slack_s"])) * 1000)


def step_query(name, sel, rng, q=None, by=""):
    """The contract's per-step query `name` with its placeholders filled in (`by`: e.g.
    " by (threads) " for one figure per step)."""
    expr = promql()["step"]["queries"][name].replace("<SEL>", sel).replace("<RANGE>", rng).replace("<BY>", by)
    return expr.replace("<Q>", str(q)) if q is not None else expr


def step_selector(testid, threads):
    return promql()["step"]["selector"].replace("<TESTID>", testid).replace("<THREADS>", str(threads))
