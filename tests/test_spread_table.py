"""tools/spread-table (issue #43 item 2), the parts that need no server: each column of the table
on collections made here whose spread has a known source (a drift, a host that slows, disturbed
runs, the database's own variation), and bad input refused. The collection itself runs on the
local stack by hand (docs/history.md#the-spread-table gives the command and the figures)."""
import json
import math

import pytest

from tbstools import spread

pytestmark = pytest.mark.fast


def manifest(testid, qps, canary=10e6, other=0.01, db_cpu=None, window=10.0):
    d = {"available": True, "window_s": window, "steal_share": 0.0, "psi_some_share": 0.01,
         "other_share": other, "client_cpu_s": 5.0, "db_cpu_s": db_cpu if db_cpu is not None else qps * window * 50e-6,
         "canary_before_ns": canary, "canary_after_ns": canary}
    return {"testid": testid, "workload": "oltp_point_select",
            "steps": [{"threads": 4, "qps": qps, "elapsed_s": window, "disturbance": d}]}


def collection(tmp, rows):
    """rows: (condition dict, [manifest kwargs per round])."""
    with open(tmp / "runs.jsonl", "w") as f:
        for cond, runs in rows:
            for r, kw in enumerate(runs):
                tid = f"spr-{cond['length']}-{cond['pinned']}-{r}"
                (tmp / f"{tid}.json").write_text(json.dumps(manifest(tid, **kw)))
                f.write(json.dumps({"testid": tid, "round": r, **cond}) + "\n")
    return spread.load(tmp)


def test_a_drift_is_raw_spread_that_interleaving_removes(tmp_path):
    drift = [{"qps": 10000 * (1 - 0.02 * i)} for i in range(10)]  # -2% a run, no run-to-run noise
    g = collection(tmp_path, [({"length": 5, "pinned": True, "warmup": 1}, drift)])
    f = spread.figures(g[(5, True, 1)])
    assert f["cv_qps"] > 5 and f["cv_qps_interleaved"] < 0.5, f
    assert f["drift_share"] > 99


def test_a_slower_host_is_spread_the_canary_removes(tmp_path):
    runs = [{"qps": 10000 / s, "canary": 10e6 * s} for s in (1, 1.3, 1, 1.25, 1.05, 1.4, 1, 1.2)]
    f = spread.figures(collection(tmp_path, [({"length": 10, "pinned": False, "warmup": 1}, runs)])[(10, False, 1)])
    assert f["cv_qps"] > 10 and f["cv_qps_canary"] < 0.01, f
    assert f["corr_qps_canary"] < -0.95


def test_disturbed_runs_are_left_out_of_the_rejected_column(tmp_path):
    runs = [{"qps": q} for q in (10000, 10100, 9900, 10050)] + [{"qps": 6000, "other": 0.6}, {"qps": 5500, "other": 0.7}]
    f = spread.figures(collection(tmp_path, [({"length": 5, "pinned": True, "warmup": 1}, runs)])[(5, True, 1)])
    assert f["kept"] == 4 and f["runs"] == 6
    assert f["cv_qps"] > 20 and f["cv_qps_rejected"] < 1.5, f
    assert f["corr_qps_other"] < -0.9


def test_cpu_per_query_spread_is_the_database_s_own(tmp_path):
    runs = [{"qps": 10000, "db_cpu": 10000 * 10 * c * 1e-6} for c in (50, 60, 50, 60, 50, 60)]
    f = spread.figures(collection(tmp_path, [({"length": 5, "pinned": True, "warmup": 1}, runs)])[(5, True, 1)])
    assert f["cv_qps"] is None or f["cv_qps"] == 0
    assert math.isclose(f["cv_cpq"], 100 * 5.4772 / 55, rel_tol=1e-3), f


def test_show_prints_a_row_per_condition_in_order(tmp_path, capsys):
    a = [{"qps": 1000 + i} for i in range(3)]
    collection(tmp_path, [({"length": 5, "pinned": True, "warmup": 1}, a), ({"length": 30, "pinned": False, "warmup": 1}, a)])
    assert spread.main(["show", "--from", str(tmp_path), "--json", str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("| 5s") or ln.startswith("| 30s")]
    assert [r.split("|")[1].strip() for r in rows] == ["5s pinned w1", "30s free w1"]
    assert set(json.loads((tmp_path / "t.json").read_text())) == {"5s pinned w1", "30s free w1"}


def test_bad_input_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        spread.main(["collect", "--pin", "maybe"])
    assert "'maybe': valid values are on, off" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        spread.main(["collect", "--lengths", "5,x"])
    assert "'5,x' is not a comma-separated list of int" in capsys.readouterr().err
    assert spread.main(["show", "--from", str(tmp_path)]) == 2
    assert f"{tmp_path}/runs.jsonl is not there" in capsys.readouterr().out
