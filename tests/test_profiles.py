"""The steps' CPU profiles in the report (issue #44), the parts that need no server: the pprof
reader against Go's own `go tool pprof`, CPU per query, the too-few-samples rule, the A/B rank
test with Holm over the functions, one sample a side, functions on one side only, the flame
graphs' SVG, the section from real manifests and profile files."""
import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT, fresh_db, k6, run_testid, sql, summary

from tidbbench.report import flame, pprof, profiles, stats
from tidbbench.report.manifest import Run, RunSet

pytestmark = [pytest.mark.fast]

GOLDEN = ROOT / "tests/golden/profile/tidb-oltp_point_select.pb.gz"


# -- a pprof writer for made-up profiles (protobuf by hand: the test's own, not the reader's code)

def _v(x):
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        out.append(b | (0x80 if x else 0))
        if not x:
            return bytes(out)


def _f(num, payload):
    if isinstance(payload, int):
        return _v(num << 3) + _v(payload)
    return _v(num << 3 | 2) + _v(len(payload)) + payload


def make_profile(stacks, seconds=10, period=10_000_000, counts_only=False):
    """Gzipped pprof bytes of a CPU profile: stacks is [(names leaf first, samples)]. counts_only:
    as an older pprof-rs (TiKV) writes, one value, cpu/count (its period then given by our k6)."""
    strings = ["", "samples", "count", "cpu", "nanoseconds"]
    sid = lambda s: strings.index(s) if s in strings else (strings.append(s) or len(strings) - 1)  # noqa: E731
    funcs, body = {}, bytearray()
    if counts_only:
        body += _f(1, _f(1, sid("cpu")) + _f(2, sid("count")))
    else:
        body += _f(1, _f(1, sid("samples")) + _f(2, sid("count")))
        body += _f(1, _f(1, sid("cpu")) + _f(2, sid("nanoseconds")))
    for names, n in stacks:
        ids = [funcs.setdefault(nm, len(funcs) + 1) for nm in names]
        body += _f(2, _f(1, b"".join(_v(i) for i in ids)) + _f(2, _v(n) + (b"" if counts_only else _v(n * period))))
    for nm, i in funcs.items():
        body += _f(4, _f(1, i) + _f(4, _f(1, i)))  # location i: one line of function i
        body += _f(5, _f(1, i) + _f(2, sid(nm)))
    for s in strings:
        body += _f(6, s.encode())
    body += _f(10, seconds * 10**9) + _f(11, _f(1, sid("cpu")) + _f(2, sid("nanoseconds"))) + _f(12, period)
    return gzip.compress(bytes(body))


def go_traces(path):
    """{stack (leaf first): ns} as `go tool pprof -traces` prints them (inlined frames included)."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    out = subprocess.run([go, "tool", "pprof", "-traces", str(path)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    unit = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
    got = {}
    for block in out.split("-----------+-------------------------------------------------------")[1:]:
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if not lines:
            continue
        m = re.match(r"\s*([\d.]+)(ns|us|µs|ms|s)\s+(.*)", lines[0])
        stack = [m.group(3)] + [ln.strip() for ln in lines[1:]]
        stack = tuple(re.sub(r" \(inline\)$", "", s) for s in stack)
        got[stack] = got.get(stack, 0) + round(float(m.group(1)) * unit[m.group(2)])
    return got


def test_the_reader_agrees_with_go_tool_pprof_on_a_real_tidb_profile():
    p = pprof.read(GOLDEN)
    ours = {}
    i = p.value_index()
    for stack, vals in p.samples:
        ours[stack] = ours.get(stack, 0) + vals[i]
    assert p.sample_types[i] == ("cpu", "nanoseconds") and p.sample_count() > profiles.MIN_SAMPLES
    assert ours == go_traces(GOLDEN)
    assert any("github.com/pingcap/tidb/" in f for f in p.functions)


def test_a_made_up_profile_reads_back_and_is_per_query():
    data = make_profile([(["pkg/a.f", "main.main"], 300), (["pkg/b.g", "pkg/a.f", "main.main"], 100),
                         (["pkg/a.f", "pkg/a.f", "main.main"], 100)])  # a.f calling itself
    p = pprof.parse(data)
    assert p.sample_count() == 500 and p.total() == 500 * 10_000_000 and p.duration_ns == 10 * 10**9
    sp = profiles.per_query(profiles.StepProfile("t", 8), p, queries=1000)
    # 5 s of CPU over 1000 queries: 5000 µs/query; a.f 4000 flat and all 5000 cumulative (once per
    # sample, however often it is on the stack)
    assert sp.ok and sp.total == pytest.approx(5000) and sp.flat == pytest.approx({"pkg/a.f": 4000, "pkg/b.g": 1000})
    assert sp.cum == pytest.approx({"pkg/a.f": 5000, "pkg/b.g": 1000, "main.main": 5000})


def test_too_few_samples_are_not_ranked():
    p = pprof.parse(make_profile([(["pkg/a.f"], profiles.MIN_SAMPLES - 1)]))
    sp = profiles.per_query(profiles.StepProfile("t", 1), p, queries=50)
    assert not sp.ok and f"{profiles.MIN_SAMPLES - 1} in 10 s" in sp.why and "too few samples" in sp.why
    p = pprof.parse(make_profile([(["pkg/a.f"], profiles.MIN_SAMPLES)]))
    assert profiles.per_query(profiles.StepProfile("t", 1), p, queries=50).ok


def test_not_a_profile_is_an_error():
    with pytest.raises(pprof.ProfileError):
        pprof.parse(gzip.compress(b"<html>hello</html>"))


def test_package_of_a_go_function():
    assert flame.package_of("github.com/pingcap/tidb/pkg/executor.(*SelectionExec).Next") == \
        "github.com/pingcap/tidb/pkg/executor"
    assert flame.package_of("runtime.mallocgc") == "runtime"
    assert flame.package_of("gopkg.in/yaml.v2.Unmarshal") == "gopkg.in/yaml"


def side(values_by_fn, queries=1000):
    """StepProfiles, one per sample: values_by_fn is {function: [samples of each run]}."""
    n = len(next(iter(values_by_fn.values())))
    out = []
    for k in range(n):
        stacks = [([f, "main.main"], vs[k]) for f, vs in values_by_fn.items() if vs[k]]
        out.append(profiles.per_query(profiles.StepProfile(f"run{k}", 8), pprof.parse(make_profile(stacks)), queries))
    return out


def test_a_function_that_moved_is_significant_after_holm_and_the_rest_are_not():
    a = side({"pkg/x.hot": [500, 510, 505, 495, 502, 498], "pkg/y.same": [300, 310, 290, 305, 295, 300],
              "pkg/z.rare": [2, 1, 0, 3, 1, 2]})
    b = side({"pkg/x.hot": [600, 610, 605, 596, 603, 599], "pkg/y.same": [302, 308, 292, 303, 297, 301],
              "pkg/z.rare": [1, 2, 2, 0, 1, 1]})
    rows, tested, only, below = profiles.compare(a, b)
    by = {(r[6], r[0]): r for r in rows}
    # z.rare and its package are below SHARE_MIN of the pooled CPU: not tested; x.hot, y.same and their
    # packages are: Holm over 4
    assert tested == 4 and set(by) == {("function", "pkg/x.hot"), ("function", "pkg/y.same"), ("package", "pkg/x"),
                                       ("package", "pkg/y")}
    hot = by[("function", "pkg/x.hot")]
    p_alone = stats.mann_whitney_u([500, 510, 505, 495, 502, 498], [600, 610, 605, 596, 603, 599])[1]
    assert hot[4] == pytest.approx(p_alone) and p_alone == pytest.approx(2 / 924)
    assert hot[5] == pytest.approx(4 * p_alone) and hot[5] < stats.ALPHA
    assert by[("package", "pkg/x")][5] == pytest.approx(4 * p_alone)
    assert by[("function", "pkg/y.same")][5] >= stats.ALPHA
    assert hot[3] == pytest.approx((hot[2] / hot[1] - 1) * 100)
    assert only == [] and below == 0


def test_functions_on_one_side_only_are_named():
    a = side({"pkg/x.old": [400, 400], "pkg/y.same": [300, 300]})
    b = side({"pkg/x.new": [400, 400], "pkg/y.same": [300, 300]})
    a = side({"pkg/x.old": [400, 400], "pkg/y.same": [300, 300], "pkg/w.rare": [0, 5]})
    _, _, only, below = profiles.compare(a, b)
    assert {(f, s) for f, s, _ in only} == {("pkg/x.old", "baseline"), ("pkg/x.new", "candidate")}
    # its mean share (cumulative) of its side's CPU: 400 of 700; 400 of 700 and of 705 (w.rare's sample)
    assert [(f, round(s, 3)) for f, _, s in only] == [("pkg/x.new", 0.571), ("pkg/x.old", 0.569)]
    assert below == 1  # w.rare: 5 of 705 in one of two samples, below SHARE_MIN of its side


def test_flame_graph_svg_widths_follow_the_cpu():
    root = flame.tree([(("pkg/a.f", "main.main"), 75.0), (("pkg/b.g", "main.main"), 25.0)])
    doc = ET.fromstring(flame.svg(root, "t"))
    ns = "{http://www.w3.org/2000/svg}"
    frames = {g.find(f"{ns}title").text.split(":")[0]: float(g.find(f"{ns}rect").get("width"))
              for g in doc.iter(f"{ns}g")}
    assert frames["all"] == flame.WIDTH and frames["main.main"] == flame.WIDTH
    assert frames["pkg/a.f"] == pytest.approx(0.75 * flame.WIDTH, abs=0.1)
    assert frames["pkg/b.g"] == pytest.approx(0.25 * flame.WIDTH, abs=0.1)


def test_differential_flame_graph_colours_what_grew_and_shrank():
    root = flame.tree([(("pkg/a.f", "main.main"), 50.0), (("pkg/b.g", "main.main"), 50.0)], base=True)
    flame.tree([(("pkg/a.f", "main.main"), 80.0), (("pkg/b.g", "main.main"), 20.0)], root=root)
    doc = ET.fromstring(flame.svg(root, "t", diff=True))
    ns = "{http://www.w3.org/2000/svg}"
    fill = {g.find(f"{ns}title").text.split(":")[0]: g.find(f"{ns}rect").get("fill") for g in doc.iter(f"{ns}g")}
    rgb = {k: tuple(map(int, re.findall(r"\d+", v))) for k, v in fill.items()}
    r, g, b = rgb["pkg/a.f"]
    assert r == 255 and g < 200 and b < 200  # grew: red
    r, g, b = rgb["pkg/b.g"]
    assert b == 255 and r < 200 and g < 200  # shrank: blue
    assert rgb["main.main"] == rgb["all"] and rgb["all"][0] == rgb["all"][2]  # unchanged total: grey-white
    titles = [t.text for t in doc.iter(f"{ns}title")]
    assert "pkg/a.f: 50.00 -> 80.00 µs/query (+60.0%)" in titles


def write_run(folder, testid, stacks, queries=1000, threads=8, workload="oltp_point_select", profile=True,
              components=None, load_generator=None):
    """A run's manifest and profile files; components: {name: stacks, or why there is none}, as
    the manifest's component_profiles (k6 records cpu_s and seconds: 10 s, a sample 10 ms)."""
    folder.mkdir(parents=True, exist_ok=True)
    step = {"threads": threads, "queries": {"total": queries}}
    if profile is True:
        rel = f"{testid}.profiles/step-{threads}.pb.gz"
        (folder / rel).parent.mkdir(exist_ok=True)
        (folder / rel).write_bytes(make_profile(stacks))
        step["profile"] = {"available": True, "file": rel, "queries": queries}
    elif profile:
        step["profile"] = {"available": False, "why": profile}
    for name, c in (components or {}).items():
        if isinstance(c, str):
            step.setdefault("component_profiles", {})[name] = {"available": False, "why": c}
            continue
        rel = f"{testid}.profiles/step-{threads}.{name}.pb.gz"
        (folder / rel).parent.mkdir(exist_ok=True)
        (folder / rel).write_bytes(make_profile(c))
        step.setdefault("component_profiles", {})[name] = {
            "available": True, "file": rel, "queries": queries, "seconds": 10, "cpu_s": sum(n for _, n in c) / 100}
    m = {"testid": testid, "workload": workload, "steps": [step], "load_generator": load_generator or {}}
    path = folder / f"{testid}.json"
    path.write_text(json.dumps(m))
    return Run(testid, m, path)


class Rep:
    def __init__(self, sets, labels):
        self.sets, self.labels, self.pair = sets, labels, len(sets) == 2
        self.workloads = ["oltp_point_select"]


def test_one_run_section_ranks_functions_and_draws_a_flame_graph(tmp_path):
    run = write_run(tmp_path / "r", "t1", [(["github.com/pingcap/tidb/pkg/executor.(*X).Next", "main.main"], 600),
                                           (["runtime.mallocgc", "main.main"], 400)])
    L = profiles.section(Rep([RunSet("t1", "run", [run])], ["a"]), tmp_path / "out")
    text = "\n".join(L)
    assert "| `github.com/pingcap/tidb/pkg/executor.(*X).Next` | `github.com/pingcap/tidb/pkg/executor` | 6,000.0 | 60.0% |" in text
    assert "| `runtime` | 4,000.0 | 40.0% |" in text
    svg = tmp_path / "out/profiles/oltp_point_select-t8.svg"
    assert svg.is_file() and "profiles/oltp_point_select-t8.svg" in text
    ET.fromstring(svg.read_text())


def test_each_components_profile_follows_tidbs_and_k6s_says_whether_it_set_the_pace(tmp_path):
    """TiDB's tables first, then TiKV 1, TiKV 2 (by number, not text), PD 1 (no profile: why, one
    line) and k6 last: its CPU per query beside TiDB's, and its CPU against its usable cores."""
    tidb = [(["github.com/pingcap/tidb/pkg/executor.(*X).Next", "main.main"], 600)]
    client = [(["go.k6.io/k6/js.(*VU).run", "runtime.main"], 900)]  # 9 s of CPU in 10 s
    comps = {"tikv-2": [(["tikv::storage::mvcc::reader::get", "tikv::server::run"], 300)],
             "tikv-10": [(["tikv::raftstore::poll", "tikv::server::run"], 250)],
             "pd-1": "the status port refused the connection (is it the server's status port, and is it listening?)",
             "client": client}
    run = write_run(tmp_path / "r", "t1", tidb, components=comps, load_generator={"cpu_cores": 2, "gomaxprocs": 1})
    text = "\n".join(profiles.section(Rep([RunSet("t1", "run", [run])], ["a"]), tmp_path / "out"))
    at = [text.index(x) for x in ("| `github.com/pingcap/tidb/pkg/executor.(*X).Next` |", "TiKV 2: 300 samples",
                                  "TiKV 10: 250 samples", "PD 1: no profile: the status port refused", "k6 (the load generator")]
    assert at == sorted(at), at
    assert "| `tikv::storage::mvcc::reader::get` | 3,000.0 | 100.0% | 3,000.0 |" in text
    # 9 s of k6's CPU over 1000 queries against TiDB's 6 s; 0.9 CPU s a second of GOMAXPROCS=1
    assert ("k6 (the load generator, its own process): 900 samples, 9,000.0 µs of k6's CPU per query against "
            "6,000.0 µs of TiDB's (1.50x). k6 used 0.90 CPU s per second of the window, 90% of its 1 usable "
            "core(s): k6 was CPU-bound: the client may have set the pace.") in text
    assert "| `go.k6.io/k6/js.(*VU).run` | 9,000.0 | 100.0% | 9,000.0 |" in text
    # on both cores (no GOMAXPROCS) the same CPU is 45% of them: not the pace-setter by its CPU
    run = write_run(tmp_path / "r2", "t2", tidb, components={"client": client}, load_generator={"cpu_cores": 2})
    text = "\n".join(profiles.section(Rep([RunSet("t2", "run", [run])], ["a"]), tmp_path / "out2"))
    assert "45% of its 2 usable core(s): below 90%: by its CPU, the client did not set the pace." in text
    # no TiDB profile (MariaDB): k6's still shows, without the comparison
    run = write_run(tmp_path / "r3", "t3", [], profile="the target is MariaDB: it serves no CPU profile",
                    components={"client": client})
    text = "\n".join(profiles.section(Rep([RunSet("t3", "run", [run])], ["a"]), tmp_path / "out3"))
    assert "no profile: the target is MariaDB" in text and "9,000.0 µs of k6's CPU per query. Its usable cores are not recorded" in text
    # too few of k6's samples to rank its functions: still whether it was CPU-bound
    run = write_run(tmp_path / "r4", "t4", tidb, components={"client": [(["go.k6.io/k6/js.f"], 150)]},
                    load_generator={"cpu_cores": 2, "gomaxprocs": 2})
    text = "\n".join(profiles.section(Rep([RunSet("t4", "run", [run])], ["a"]), tmp_path / "out4"))
    assert ("k6: too few samples to rank: 150 in 10 s (at least 200 needed; the profiled process was nearly idle). "
            "k6 used 0.15 CPU s per second of the window, 8% of its 2 usable core(s): below 90%") in text


def test_an_older_pprof_rs_profile_counts_samples_times_the_period():
    """TiKV's older pprof-rs writes cpu/count alone; our k6 gives it the period of the 99 Hz asked
    for (k6/ext/tbs/profile.go normalize): its CPU per query is samples x period."""
    p = pprof.parse(make_profile([(["tikv::server::f"], 990)], period=10**9 // 99, counts_only=True))
    assert p.sample_types == [("cpu", "count")] and p.sample_count() == 990
    sp = profiles.per_query(profiles.StepProfile("t", 8), p, queries=1000)
    assert sp.ok and sp.total == pytest.approx(990 * (10**9 // 99) / 1000 / 1000)  # 10 s of CPU: 10,000 µs/query


def test_no_profile_says_why_and_one_sample_a_side_calls_nothing_significant(tmp_path):
    ma = write_run(tmp_path / "r", "ma", [], profile="the target is MariaDB: it serves no CPU profile")
    L = "\n".join(profiles.section(Rep([RunSet("ma", "run", [ma])], ["a"]), tmp_path / "o1"))
    assert "testid ma, 8 threads: no profile: the target is MariaDB: it serves no CPU profile." in L
    a = write_run(tmp_path / "r", "a1", [(["pkg/x.f", "main.main"], 500), (["pkg/y.g", "main.main"], 500)])
    b = write_run(tmp_path / "r", "b1", [(["pkg/x.f", "main.main"], 900), (["pkg/y.g", "main.main"], 500)])
    L = "\n".join(profiles.section(Rep([RunSet("a1", "run", [a]), RunSet("b1", "run", [b])], ["A", "B"]), tmp_path / "o2"))
    assert "nothing is called significant" in L and "p (Holm)" not in L
    assert "| `pkg/x.f` | 5,000.0 | 9,000.0 | +80.0% |" in L
    assert ET.fromstring((tmp_path / "o2/profiles/oltp_point_select-t8-diff.svg").read_text()) is not None


def test_no_section_without_any_profile(tmp_path):
    run = write_run(tmp_path / "r", "t0", [], profile=False)
    assert profiles.section(Rep([RunSet("t0", "run", [run])], ["a"]), tmp_path / "o") == []
    assert not (tmp_path / "o").exists()


def test_the_golden_profile_is_kept_small():
    assert GOLDEN.stat().st_size < 200_000 and Path(GOLDEN).read_bytes()[:2] == b"\x1f\x8b"


# -- on the local stack (about a minute): a real TiDB run keeps a profile `go tool pprof` opens and
# its report shows where the CPU went; MariaDB and a status port that refuses give "no profile" and
# why, with the run's figures there as ever

def go_pprof_top(path):
    go = shutil.which("go") or "/usr/local/go/bin/go"
    return subprocess.run([go, "tool", "pprof", "-top", str(path)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def tidb_run(stack):
    db = fresh_db("tidb", "sbtest_prof")
    common = ["-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=1000"]
    k6("run", *common, "prepare.js")
    p = k6("run", *common, "-e", "threads=1,2", "-e", "time=4", "oltp.js")
    yield summary(run_testid(p.stdout + p.stderr)), common
    sql("tidb", f"DROP DATABASE {db}")


@pytest.mark.full
@pytest.mark.quiet  # its profiles' windows are asserted to the half second
def test_a_tidb_run_keeps_a_profile_per_step_that_pprof_opens(tidb_run, tmp_path):
    m, _ = tidb_run
    for step in m["steps"]:
        pr = step["profile"]
        assert pr["available"], pr
        assert pr["file"] == f"{m['testid']}.profiles/step-{step['threads']}.pb.gz"
        assert pr["queries"] == step["queries"]["total"] > 0
        # TiDB's profiler hands out whole 1-s slices of its own: a profile runs up to a second short
        assert pr["parts"] == [4] and 2.5 <= pr["seconds"] <= 4.2 and pr["samples"] > 0
        # the profile's window is the step's measured window (the request goes out at its start)
        w = step["window"]
        assert abs(pr["window"][0] - w["measure_start"]) < 500 and abs(pr["window"][1] - w["measure_end"]) < 1500, (pr, w)
        f = ROOT / "results" / pr["file"]
        top = go_pprof_top(f)
        assert top.returncode == 0 and "Type: cpu" in top.stdout and "github.com/pingcap/tidb/" in top.stdout, top.stderr
    out = tmp_path / "rep"
    p = subprocess.run([str(ROOT / "scripts/report"), "--out", str(out), m["testid"]], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    md = (out / "report.md").read_text()
    sec = md[md.index("## Where the database's CPU went"):]
    assert "### Point Select: where the database's CPU went (2 threads)" in sec
    assert "github.com/pingcap/tidb/pkg/" in sec or "too few samples to rank" in sec
    if "too few samples" not in sec:
        assert (out / "profiles/oltp_point_select-t2.svg").is_file()
        assert 'src="profiles/oltp_point_select-t2.svg"' in (out / "report.html").read_text()


@pytest.mark.full
@pytest.mark.quiet  # its step times are asserted to the half second, against the run's
def test_a_refused_status_port_gives_no_profile_and_the_run_goes_on(tidb_run):
    m0, common = tidb_run
    ln = socket.socket()
    ln.bind(("127.0.0.1", 0))
    port = ln.getsockname()[1]
    ln.close()  # nothing listens there now
    p = k6("run", *common, "-e", "threads=1,2", "-e", "time=4", "-e", f"tidb_status_addr=127.0.0.1:{port}", "oltp.js")
    m = summary(run_testid(p.stdout + p.stderr))
    for s0, s in zip(m0["steps"], m["steps"]):
        assert s["profile"] == {"available": False, "why": "the status port refused the connection (is it the "
                                "server's status port, and is it listening?)"}, s["profile"]
        assert s["queries"]["total"] > 0 and s["errors"] == 0 and s["elapsed_s"] == pytest.approx(s0["elapsed_s"], abs=0.5)
    assert not (ROOT / "results" / f"{m['testid']}.profiles").exists()
    # the run took as long as one that profiled: nothing waited for the status port
    assert m["k6"]["test_run_duration_ms"] < m0["k6"]["test_run_duration_ms"] + 2000
    assert str(port) not in p.stdout + p.stderr and f"{m['testid']}.profiles" not in p.stdout + p.stderr


def refused_port():
    ln = socket.socket()
    ln.bind(("127.0.0.1", 0))
    port = ln.getsockname()[1]
    ln.close()  # nothing listens there now
    return port


@pytest.mark.full
@pytest.mark.quiet  # its profiles' windows are asserted to the tenth of a second
def test_k6s_own_profile_is_taken_beside_tidbs_and_a_silent_tikv_and_pd_say_why(tidb_run, tmp_path):
    """profile_client=true on the local TiDB: k6's own profile over TiDB's window, with its query
    count, read by our decoder and by `go tool pprof`; TiKV and PD addresses where nothing listens
    (no TiKV or PD runs here) give those components "no profile" and why, and no address reaches
    the output, the file names or the reasons."""
    _, common = tidb_run
    tikv, pd = refused_port(), refused_port()
    p = k6("run", *common, "-e", "threads=2", "-e", "time=4", "-e", "profile_client=true",
           "-e", f"tikv_status_addr=127.0.0.1:{tikv}", "-e", f"pd_addr=127.0.0.1:{pd}", "oltp.js")
    m = summary(run_testid(p.stdout + p.stderr))
    (step,) = m["steps"]
    db, cp = step["profile"], step["component_profiles"]
    assert db["available"] and set(cp) == {"tikv-1", "pd-1", "client"}, cp
    refused = {"available": False, "why": "the status port refused the connection (is it the server's status port, "
                                          "and is it listening?)"}
    assert cp["tikv-1"] == refused and cp["pd-1"] == refused
    c = cp["client"]
    assert c["available"] and c["file"] == f"{m['testid']}.profiles/step-2.client.pb.gz", c
    assert c["queries"] == db["queries"] == step["queries"]["total"] > 0
    assert c["source"] == "k6's own process (runtime/pprof)" and c["parts"] == [4] and 3.5 <= c["seconds"] <= 4.5
    # the same window as TiDB's: started together (TiDB's may end up to a second early, its 1-s slices)
    assert abs(c["window"][0] - db["window"][0]) < 300 and abs(c["window"][1] - db["window"][1]) < 1500, (c, db)
    f = ROOT / "results" / c["file"]
    prof = pprof.read(f)
    assert prof.sample_types[prof.value_index()] == ("cpu", "nanoseconds") and prof.sample_count() == c["samples"] > 0
    assert any(fn.startswith("go.k6.io/k6/") for fn in prof.functions), sorted(prof.functions)[:20]
    assert not any("github.com/pingcap/tidb/" in fn for fn in prof.functions)  # k6's, not TiDB's
    top = go_pprof_top(f)
    assert top.returncode == 0 and "Type: cpu" in top.stdout, top.stderr
    assert sorted(x.name for x in (ROOT / "results" / f"{m['testid']}.profiles").iterdir()) == \
        ["step-2.client.pb.gz", "step-2.pb.gz"]
    out = p.stdout + p.stderr
    assert f":{tikv}" not in out and f":{pd}" not in out and str(tikv) not in json.dumps(step)
    # the report: TiDB's section, then PD's and TiKV's reasons and k6's line
    rep = tmp_path / "rep"
    r = subprocess.run([str(ROOT / "scripts/report"), "--out", str(rep), m["testid"]], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    sec = (rep / "report.md").read_text().split("## Where the database's CPU went", 1)[1]
    assert sec.index("TiKV 1: no profile: the status port refused") < sec.index("PD 1: no profile: the status port refused")
    assert "k6 (the load generator, its own process): " in sec or "k6: too few samples to rank" in sec, sec


@pytest.mark.full
def test_mariadb_says_why_there_is_no_profile(stack):
    db = fresh_db("mariadb", "sbtest_prof")
    common = ["-e", "mysql_port=3306", "-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=1000"]
    try:
        k6("run", *common, "prepare.js")
        p = k6("run", *common, "-e", "threads=1", "-e", "time=1", "oltp.js")
        m = summary(run_testid(p.stdout + p.stderr))
        (step,) = m["steps"]
        assert step["queries"]["total"] > 0
        assert step["profile"] == {"available": False, "why": "the target is MariaDB: it serves no CPU profile "
                                   "(only TiDB's status port does)"}
    finally:
        sql("mariadb", f"DROP DATABASE {db}", db)


@pytest.mark.full
def test_the_differential_flame_graph_renders_in_chromium(tmp_path):
    """report.html's differential flame graph, drawn by headless Chromium (Debian's, as the report's
    own render test): the frame that grew shows red, the one that shrank blue."""
    from test_report_helpers import chromium_screenshot, count_color, decode_png
    from tidbbench.report.html import to_html
    a = [write_run(tmp_path / "r", f"a{k}", [(["pkg/grow.f", "main.main"], 300 + k), (["pkg/shrink.g", "main.main"], 700 - k)])
         for k in range(3)]
    b = [write_run(tmp_path / "r", f"b{k}", [(["pkg/grow.f", "main.main"], 700 + k), (["pkg/shrink.g", "main.main"], 300 - k)])
         for k in range(3)]
    out = tmp_path / "rep"
    L = profiles.section(Rep([RunSet("a", "sweep", a), RunSet("b", "sweep", b)], ["A", "B"]), out)
    (out / "report.html").write_text(to_html("# t\n\n" + "\n".join(L)))
    im = decode_png(chromium_screenshot(out / "report.html", tmp_path / "diff.png", size="1200,1200"))
    red, blue = count_color(im, (255, 35, 35), tol=40), count_color(im, (35, 35, 255), tol=40)
    assert red > 2000 and blue > 2000, (red, blue)


def test_a_change_points_evidence_names_the_functions_that_moved(tmp_path):
    from tidbbench.history import evidence
    rb = write_run(tmp_path / "r", "before", [(["pkg/x.f", "main.main"], 500), (["pkg/y.g", "main.main"], 500),
                                              (["pkg/z.h", "main.main"], 300)])
    ra = write_run(tmp_path / "r", "after", [(["pkg/x.f", "main.main"], 900), (["pkg/y.g", "main.main"], 450),
                                             (["pkg/z.h", "main.main"], 300)])
    items = evidence.function_items(rb, ra, 8)
    assert [it["name"] for it in items] == ["pkg/x.f", "pkg/y.g"]  # z.h did not move: not listed
    assert evidence.line(items[0]) == ("function `pkg/x.f` at 8 threads: 5000.00 µs/query -> 9000.00 µs/query "
                                       "(+80.0%; one run a side, not a test)")
    none = write_run(tmp_path / "r", "nop", [], profile="the target is MariaDB: it serves no CPU profile")
    assert evidence.function_items(rb, none, 8) == []


def test_cpu_per_query_counts_the_queries_of_the_profiles_own_duration(tmp_path):
    """A profile of 8 s in a step measured for 10 s: its CPU is that of 80% of the step's queries."""
    (tmp_path / "t.profiles").mkdir(parents=True)
    (tmp_path / "t.profiles/step-4.pb.gz").write_bytes(make_profile([(["pkg/a.f"], 400)], seconds=8))
    step = {"threads": 4, "elapsed_s": 10.0, "queries": {"total": 1000},
            "profile": {"available": True, "file": "t.profiles/step-4.pb.gz", "queries": 1000}}
    m = {"testid": "t", "workload": "oltp_point_select", "steps": [step]}
    sp = profiles.load_step(Run("t", m, tmp_path / "t.json"), 4)
    assert sp.ok and sp.total == pytest.approx(4e6 / 800)  # 4 s of CPU over 800 queries


PROFILES_JS = """
import { stepProfile, stepComponentProfiles, statusAddress, notProfiled, profileFile, profileScenario, profileTargets } from '%s';
export const options = { vus: 1, iterations: 1 };
export default function () {
  const notes = {
    'profiles/t1/t8': JSON.stringify({ available: true, file: 'x', samples: 5 }),
    'profiles/t1/t16': JSON.stringify({ available: false, why: 'because' }),
    'profiles/t1/t8/client': JSON.stringify({ available: true, file: 'c', samples: 7 }),
    'profiles/t1/t8/tikv-1': JSON.stringify({ available: false, why: 'refused' }),
    'profiles/t1/t80/client': JSON.stringify({ available: true, file: 'other step' }),
  };
  const all = { profile: true, profile_client: true, tikv_status_addr: 'tikv:20180,tikv2:20180', pd_addr: 'pd:2379',
    tidb_status_addr: '', mysql_host: 'db1' };
  console.log(`RESULT ${JSON.stringify({
    ok: stepProfile(notes, 't1', 8, 1234), no: stepProfile(notes, 't1', 16, 99), none: stepProfile(notes, 't1', 4, 1) || null,
    comp: stepComponentProfiles(notes, 't1', 8, 1234), compNone: stepComponentProfiles(notes, 't1', 4, 1) || null,
    addr: [statusAddress({ tidb_status_addr: '', mysql_host: 'db1' }), statusAddress({ tidb_status_addr: 'h:1', mysql_host: 'db1' }),
      statusAddress({ tidb_status_addr: '', mysql_host: '::1' })],
    why: [notProfiled('tidb'), notProfiled('mariadb'), notProfiled('mysql')],
    file: profileFile('run-1', 8), fileTikv: profileFile('run-1', 8, 'tikv-1'),
    off: profileScenario({ profile: false }, 10), on: Object.keys(profileScenario({ profile: true }, 10)),
    clientOnly: Object.keys(profileScenario({ profile: false, profile_client: true }, 10)),
    tidb: profileTargets(all, 'tidb'), mariadb: profileTargets(all, 'mariadb'),
    noDb: profileTargets({ ...all, profile: false }, 'tidb'),
  })}`);
}
"""


def test_the_k6_side_of_the_profiles(tmp_path):
    """k6/lib/profiles.js, run by bin/k6: the manifest's `profile` and `component_profiles` from the
    VU's notes (with the step's query count), the status address, why MariaDB and MySQL have none,
    the file names, the scenario, the targets of a step (TiDB's, TiKV's, PD's, k6's)."""
    script = tmp_path / "profiles_cases.js"
    script.write_text(PROFILES_JS % (ROOT / "k6/lib/profiles.js").as_uri())
    env = dict(os.environ, K6_LOG_FORMAT="raw", K6_OUT="")
    p = subprocess.run([str(ROOT / "bin/k6"), "run", "--quiet", "--summary-mode=disabled", "--no-usage-report",
                        str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(next(ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("RESULT "))[7:])
    assert r["ok"] == {"available": True, "file": "x", "samples": 5, "queries": 1234}
    assert r["no"] == {"available": False, "why": "because"} and r["none"] is None
    assert r["addr"] == ["db1:10080", "h:1", "[::1]:10080"]
    assert r["why"] == ["", "the target is MariaDB: it serves no CPU profile (only TiDB's status port does)",
                        "the target is MySQL: it serves no CPU profile (only TiDB's status port does)"]
    assert r["file"] == "run-1.profiles/step-8.pb.gz" and r["fileTikv"] == "run-1.profiles/step-8.tikv-1.pb.gz"
    assert r["off"] == {} and r["on"] == ["profiles"] and r["clientOnly"] == ["profiles"]
    # the step's other profiles: its own notes only (not t80's), each with the step's query count
    assert r["comp"] == {"client": {"available": True, "file": "c", "samples": 7, "queries": 1234},
                         "tikv-1": {"available": False, "why": "refused"}} and r["compNone"] is None
    assert r["tidb"] == {"take": [{"name": "", "component": "tidb", "addr": "db1:10080"},
                                  {"name": "tikv-1", "component": "tikv", "addr": "tikv:20180"},
                                  {"name": "tikv-2", "component": "tikv", "addr": "tikv2:20180"},
                                  {"name": "pd-1", "component": "pd", "addr": "pd:2379"},
                                  {"name": "client", "component": "client", "addr": ""}], "skip": []}
    go_with = "the target is MariaDB: TiKV's and PD's profiles go with a TiDB target"
    assert r["mariadb"] == {"take": [{"name": "client", "component": "client", "addr": ""}],
                            "skip": [{"name": "", "why": r["why"][1]}, {"name": "tikv-1", "why": go_with},
                                     {"name": "tikv-2", "why": go_with}, {"name": "pd-1", "why": go_with}]}
    assert r["noDb"] == {"take": [{"name": "client", "component": "client", "addr": ""}], "skip": []}


def test_a_merged_run_keeps_the_first_load_generators_component_profiles_per_query_of_all():
    """tidbbench.merge: only instance 0 takes the profiles (k6/lib/profiles.js); the merged step keeps
    its TiDB and component profiles with the query count of every instance."""
    from tidbbench import merge, sbhist
    hist = {"scheme": sbhist.SCHEME, "buckets": sbhist.BUCKETS, "min_ms": sbhist.MIN_MS, "max_ms": sbhist.MAX_MS,
            "count": 1, "sum_ms": 1.0, "min": 1.0, "max": 1.0, "counts": [[500, 1]]}
    client = {"available": True, "file": "t.profiles/step-8.client.pb.gz", "queries": 100, "samples": 300}
    tikv = {"available": False, "why": "the status port refused the connection"}
    per = {0: {"_id": 1, "threads": 8, "seconds": 5, "elapsed_s": 5, "queries": {"total": 100}, "histogram": hist,
               "window": {"measure_start": 1, "measure_end": 2}, "profile": {"available": True, "queries": 100},
               "component_profiles": {"client": client, "tikv-1": tikv}},
           1: {"_id": 2, "threads": 8, "seconds": 5, "elapsed_s": 5, "queries": {"total": 150}, "histogram": hist,
               "window": {"measure_start": 1, "measure_end": 2}}}
    m = merge.merge_step(8, per, 95, "t")
    assert m["profile"]["queries"] == 250
    assert m["component_profiles"] == {"client": {**client, "queries": 250}, "tikv-1": tikv}
