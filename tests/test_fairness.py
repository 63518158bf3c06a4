"""Threads fairness (issue #42) in the files after a run: a split run's fairness is made again
over every instance's threads (tidbbench/merge.py, with the rule k6/lib/summary.js applies,
k6/jstest/summary_test.go tests that one), and the report names every warned thread under its
workload's table (tidbbench/report/disturb.py)."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from tidbbench import contract
from tidbbench.merge import merge_fairness
from tidbbench.report import disturb

pytestmark = pytest.mark.fast


def part(ids, events, time_s):
    return {"per_thread": {"ids": ids, "events": events, "time_s": time_s}}


def test_a_split_steps_fairness_is_made_over_all_its_threads():
    # instance 0 ran threads 0-1, instance 1 threads 2-3: thread 3 is below a tenth of the
    # average of all four (76.75), though not of its own instance's (53.5)
    f = merge_fairness([part([2, 3], [100, 7], [2.0, 2.0]), part([0, 1], [100, 100], [1.0, 3.0])])
    assert f["threads"] == 4 and f["per_thread"]["ids"] == [0, 1, 2, 3]
    assert f["per_thread"]["events"] == [100, 100, 100, 7]
    assert f["events"]["avg"] == pytest.approx(76.75) and f["events"]["min"] == 7 and f["events"]["max"] == 100
    sd = ((3 * 23.25 ** 2 + 69.75 ** 2) / 4) ** 0.5  # over the threads, as sysbench's
    assert f["events"]["stddev"] == pytest.approx(sd)
    assert f["time_s"] == {"avg": 2.0, "stddev": pytest.approx((2 / 4) ** 0.5), "min": 1.0, "max": 3.0}
    assert contract.timing()["fair_share"] == 0.1  # the rule's share, k6/contract.json
    assert [w.split(" (")[0] for w in f["warnings"]] == ["thread 3 ran 7 events"]
    assert "(9.1% of the threads' average, 76." in f["warnings"][0]


def test_a_thread_with_no_events_is_warned_and_even_threads_are_not():
    assert merge_fairness([part([0, 1, 2], [50, 50, 50], [1, 1, 1])])["warnings"] == []
    w = merge_fairness([part([0, 1, 2], [50, 0, 1], [1, 0, 1])])["warnings"]
    assert [x.split(" (")[0] for x in w] == ["thread 1 ran 0 events", "thread 2 ran 1 event"]


def test_the_report_names_each_warned_thread():
    step = {"threads": 3, "seconds": 2, "elapsed_s": 2.0, "errors": 0, "reconnects": 0,
            "fairness": {"warnings": ["thread 1 ran 1 event (0.1% of the threads' average, 901.0)"]}}
    run = SimpleNamespace(steps=[step], options={"time": 2}, workload="select_random_points",
                          path=Path("results/x.json"), manifest={})
    notes = disturb.step_notes(run, [])
    assert len(notes) == 1 and "3 threads, threads fairness: thread 1 ran 1 event" in notes[0]
    assert "its own slice of k" in notes[0]  # select_random_*: sysbench's threads are as uneven
    run.workload = "oltp_read_write"
    assert "slice" not in disturb.step_notes(run, [])[0]
    step["fairness"]["warnings"] = []
    assert disturb.step_notes(run, []) == []
