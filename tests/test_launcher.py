"""Issue 30: one launcher core (k6/ext/launch, our k6's subcommand `k6 x tbs`) for every way a
run starts; issue 28: README's "benchmark another database" with the local stack up.

- one function makes testids (launch.NewTestID): the repository's sources are searched for the
  ways testids used to be made (a UTC timestamp format, a 16-bit random hex suffix); only that
  function may have them (a negative control: the matcher finds each of the five old makers);
- `k6 x tbs testid` prints testids that follow the contract's rule;
- with the local stack up (its .stack/k6.env gives k6 the sbtest password), the documented
  command with the user's own host, port, user and password file prepares and runs against the
  local TiDB; the password is never in a process's arguments, the output, the run's log or its
  manifest; a wrong password file is used as given (Access denied), not the stack's; a stack
  that gives its password by file (mysql_password_file in .stack/k6.env) works as well.
"""
import json
import os
import re
import subprocess
import time

from conftest import ROOT, STATE, fresh_db
import pytest

pytestmark = pytest.mark.fast

CORE = "k6/ext/launch/testid.go"
# the ways a testid was made: a timestamp format (Go's layout, strftime/date's, JS's UTC getters)
# next to a random 16-bit suffix (od on /dev/urandom, Python's randrange, JS's Math.random)
MAKERS = [re.compile(p) for p in (
    "2006" + r"0102-150405",
    "%Y" + r"%m%d-%H%M%S",
    "getUTC" + "FullYear",
    r"od -An " + "-N2",
    r"randrange\(0x1" + r"0000\)",
    r"Math\.random\(\) \* 0x1" + "0000",
)]
SKIP_DIRS = {".git", ".stack", "bin", "results", "node_modules"}
SOURCE = re.compile(r"\.(go|js|ts|py|sh|ya?ml|json|md|alloy|cfg|toml)$")


def sources():
    for dirpath, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for f in files:
            p = os.path.join(dirpath, f)
            rel = os.path.relpath(p, ROOT)
            if SOURCE.search(f) or (rel.startswith(("scripts/", "k8s/", "tools/", "compose/")) and "." not in f):
                yield rel, p


def makers_in(text):
    return [m.pattern for m in MAKERS if m.search(text)]


def test_one_function_makes_testids():
    # negative control: the five makers this issue replaced are each found
    old = {
        "k6/lib/run.js": "const rnd = Math.floor(Math.random() * 0x10000).toString(16); d.getUTCFullYear()",
        "scripts/k6": "testid=$(date -u +%Y%m%d-%H%M%S)-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \\n')",
        "k8s/render-testrun": 'd.strftime("%Y%m%d-%H%M%S") + f"-{random.randrange(0x10000):04x}"',
    }
    for where, text in old.items():
        assert makers_in(text), where
    found = {}
    me = os.path.relpath(__file__, ROOT)
    for rel, path in sources():
        if rel == me:
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        hits = makers_in(text)
        if hits:
            found[rel] = hits
    assert CORE in found, f"{CORE} no longer makes testids: update this test"
    del found[CORE]
    assert not found, ("testids are made in one place, launch.NewTestID (k6/ext/launch/testid.go); "
                       f"get them from `bin/k6 x tbs testid` or tbs.newTestId(): {found}")


def test_core_prints_testids_that_follow_the_contract():
    rule = re.compile(json.loads((ROOT / "k6/contract.json").read_text())["testid"]["pattern"])
    ids = [subprocess.run([str(ROOT / "bin/k6"), "x", "tbs", "testid"], capture_output=True, text=True,
                          timeout=60, check=True).stdout.strip() for _ in range(3)]
    for i in ids:
        assert rule.match(i) and re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", i), i


def cmdlines(root):
    """The arguments of process `root` and of every process under it (the run's own: other
    programs on the host, such as a sysbench another test runs, are not this run's)."""
    parent, out = {}, []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    tree, grew = {root}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in tree} - tree
        tree |= more
        grew = bool(more)
    for pid in tree:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                out.append(f.read().decode(errors="replace"))
        except OSError:
            pass
    return out


@pytest.mark.full
def test_benchmark_another_database_with_the_stack_up(stack, tmp_path):
    """README's command (issue 28): the user's host, port, user and password file win over the
    stack's settings, which give k6 the sbtest password too."""
    stack_env = (STATE / "k6.env").read_text()
    assert re.search(r"^mysql_password(_file)?=.", stack_env, re.M), "the stack gives k6 no password"
    pw = (STATE / "secrets" / "sbtest").read_text().strip()
    pwfile = tmp_path / "bench-password"
    pwfile.write_text(pw + "\n")
    pwfile.chmod(0o600)
    db = fresh_db("tidb", "sbtest_launcher_other")
    target = ["-e", "mysql_host=127.0.0.1", "-e", "mysql_port=4000", "-e", "mysql_user=sbtest",
              "-e", f"mysql_password_file={pwfile}"]
    small = ["-e", f"mysql_db={db}", "-e", "tables=1", "-e", "table_size=200"]
    env = dict(os.environ, results_dir=str(tmp_path))
    p = subprocess.run([str(ROOT / "scripts/k6"), "run", "-q", *target, *small, "k6/prepare.js"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    testid = f"launcher-other-{int(time.time())}"
    proc = subprocess.Popen([str(ROOT / "scripts/k6"), "run", *target, *small, "-e", "threads=2", "-e", "time=1",
                             "-e", "grace_time=1", "-e", f"testid={testid}", "k6/oltp.js"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    leaked = []
    while proc.poll() is None:
        leaked += [c for c in cmdlines(proc.pid) if pw in c]
        time.sleep(0.2)
    out = proc.stdout.read()
    assert proc.returncode == 0, out[-3000:]
    assert "not both" not in out and f"testid={testid}" in out
    assert not leaked, "the password was in a process's arguments"
    manifest = (tmp_path / f"{testid}.json").read_text()
    assert json.loads(manifest)["steps"][0]["queries"]["total"] > 0
    log = STATE / "logs" / "k6-runs" / f"{testid}.log"
    assert log.is_file()
    for text in (out, manifest, log.read_text()):
        assert pw not in text
    # the stack giving its password by file (as scripts/stack writes .stack/k6.env): the tables read
    state = tmp_path / "state"
    state.mkdir()
    lines = [x for x in stack_env.splitlines() if not x.startswith(("mysql_password=", "mysql_password_file="))]
    (state / "k6.env").write_text("\n".join(lines + [f"mysql_password_file={STATE / 'secrets' / 'sbtest'}"]) + "\n")
    p = subprocess.run([str(ROOT / "scripts/k6"), "run", "-q", *small, "-e", "command=prewarm", "k6/prepare.js"],
                       cwd=ROOT, env=dict(env, TBS_STATE=str(state)), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    # the user's file is the password used: a wrong one is refused by TiDB, whatever the stack has
    pwfile.write_text("not-the-password\n")
    p = subprocess.run([str(ROOT / "scripts/k6"), "run", *target, *small, "-e", "threads=1", "-e", "time=1",
                        "k6/oltp.js"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "Access denied" in p.stdout + p.stderr, p.stdout[-2000:] + p.stderr[-2000:]
    with __import__("conftest").connect("tidb") as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {db}")


def test_compose_entrypoint_runs_through_the_core(tmp_path):
    """k6/docker-entrypoint.sh (compose's k6 image) with our k6 on PATH, as in the image: a run of
    oltp.js (options after the script, as compose's commands give them) gets a new testid and its
    lines in $TBS_RUN_LOGS/<testid>.log; a password given with -e replaces compose's
    mysql_password_file (no "not both"). Port 1: k6 stops at its first connection, naming it."""
    compose_pw = tmp_path / "sbtest_password"
    compose_pw.write_text("compose-secret\n")
    env = {"PATH": f"{ROOT / 'bin'}:/usr/bin:/bin", "TBS_RUN_LOGS": str(tmp_path / "runs"), "K6_OUT": "",
           "mysql_host": "127.0.0.1", "mysql_port": "1", "mysql_user": "sbtest",
           "mysql_password_file": str(compose_pw), "results_dir": str(tmp_path / "results")}
    p = subprocess.run(["sh", str(ROOT / "k6/docker-entrypoint.sh"), "run", "oltp.js", "-e", "mysql_password=mine",
                        "-e", "threads=1"], cwd=ROOT / "k6", env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "cannot connect to MySQL at 127.0.0.1:1 as user 'sbtest'" in out, out[-2000:]
    assert "not both" not in out and "mine" not in out and "compose-secret" not in out
    [log] = (tmp_path / "runs").glob("*.log")
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}\.log", log.name) and "cannot connect" in log.read_text()
    # anything but a run is k6 itself
    p = subprocess.run(["sh", str(ROOT / "k6/docker-entrypoint.sh"), "version"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "k6 v1.8.1" in p.stdout, p.stdout + p.stderr
