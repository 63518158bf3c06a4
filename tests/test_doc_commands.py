"""Documented commands are tested (issue #28): every `sh` block of README.md, CONTRIBUTING.md and
docs/*.md, read from the markdown itself (tests/doccmds.py), runs as written against the local
stack.

- static: every block of commands is tagged `sh`; every marker parses and each skip-line /
  run-only prefix matches a command of its block (a marker cannot outlive its command); a block
  that calls Docker, kubectl or helm carries a skip or compose marker (nothing here runs them;
  the compose ones run in tests/test_compose_engine.py); no documented command puts a password
  in a process' arguments;
- live: each runnable block, in document order (README.md first, then CONTRIBUTING.md, then docs/
  by name), as one bash script (`set -euo pipefail`) from the repository's root. Its environment,
  as CONTRIBUTING.md's "Documented commands are tested" says: `mysql_db` names a database of the test's
  own on both targets (made afresh; a command's own `-e mysql_db=`/`--mysql-db` wins),
  `results_dir` a folder of its own, conftest's short
  connect_time/grace_time; the placeholders TESTID, BASELINE and CANDIDATE are the testids earlier
  blocks printed (the last; the last two runs of one workload). A block fails the test when a
  command fails.

The commands that cannot run here, and why, are the markers' reasons:
`python3 tests/test_doc_commands.py` prints them.
"""
import os
import re
import subprocess
import sys
import time

import pytest

from doccmds import ROOT, blocks, sh_blocks

# serial (conftest.py): the documented blocks run `scripts/stack up`, plans that set globals and the shared history store
pytestmark = [pytest.mark.fast, pytest.mark.serial]

DB = "sbtest_docs_cmd"
# Known failures: a text of the command -> (the error it stops with, why). Strict, so the test
# fails (XPASS) once the fix lands and the entry must go; a block that fails with any other error
# fails the test. None today.
XFAIL: dict[str, tuple[str, str]] = {}


class KnownFailure(Exception):
    """A block failed with the error an XFAIL entry names."""
DOCKER = re.compile(r"(^|[;&|]\s*|\b[A-Z_]+=\S*\s+)(docker|kubectl|helm)\b")
SECRET_ARGS = [
    (re.compile(r"-e\s+mysql_password="), "-e mysql_password=... (use mysql_password_file)"),
    (re.compile(r"--from-literal=\S*password", re.I), "kubectl --from-literal with a password (use --from-file)"),
    (re.compile(r"://[^/\s:@]+:[^/\s@]+@"), "a password in a URL (user:password@)"),
    (re.compile(r"--(mysql-)?password[= ]"), "--password on the command line"),
]


def runnable():
    out = []
    for b in sh_blocks():
        if b.kind() != "run" or all(reason for _, _, reason in b.plan()):
            continue
        cmds = " ".join(c for _, c, r in b.plan() if not r)
        marks = [pytest.mark.xfail(strict=True, raises=KnownFailure, reason=why)
                 for text, (_, why) in XFAIL.items() if text in cmds]
        out.append(pytest.param(b, id=b.where, marks=marks))
    return out


def not_run():
    """[(where, command, reason)]: every documented command the doc-test does not run."""
    out = []
    for b in sh_blocks():
        k = b.kind()
        for n, cmd, reason in b.plan():
            if k != "run":
                reason = dict((kk, r) for kk, _, r in b.markers)[k]
            if reason:
                out.append((f"{b.page.relative_to(ROOT)}:{n}", cmd, (k if k == "compose" else "skip") + ": " + reason))
    return out


# ---------------------------------------------------------------- static

def test_every_block_of_commands_is_tagged_sh():
    def first(b):  # a block's first line of text (a diagram's may name scripts/ further down)
        return next((line.strip() for _, line in b.text if line.strip()), "")
    untagged = [b.where for b in blocks()
                if b.lang != "sh" and re.match(r"^(scripts/|tools/|k8s/|docker |kubectl |helm )", first(b))]
    assert not untagged, f"blocks of commands not tagged sh (the doc-test would not see them): {untagged}"
    assert len(sh_blocks()) >= 30  # the parser reads the pages


def test_markers_parse_and_match_their_commands():
    problems = []
    for b in blocks():
        problems += [f"{b.page.name}:{n}: unreadable marker {line!r}" for n, line in b.bad_markers]
        if b.markers and b.lang != "sh":
            problems.append(f"{b.where}: a marker on a block that is not sh")
        words = [" ".join(c.split()) for _, c in b.commands()]
        for kind, prefix, _ in b.markers:
            if kind in ("skip-line", "run-only") and not any(w.startswith(prefix) for w in words):
                problems.append(f"{b.where}: '{kind} {prefix}' matches none of its commands")
    assert not problems, "\n".join(problems)


def test_docker_kubectl_and_helm_commands_are_not_run_here():
    unmarked = [f"{b.where}: {cmd}" for b in sh_blocks() if b.kind() == "run"
                for _, cmd, reason in b.plan() if not reason and DOCKER.search(cmd)]
    assert not unmarked, "commands the doc-test would run but cannot (mark the block skip or compose):\n" + \
        "\n".join(unmarked)


def test_no_documented_command_puts_a_secret_in_its_arguments():
    found = []
    for b in sh_blocks():
        for n, cmd in b.commands():
            found += [f"{b.page.relative_to(ROOT)}:{n}: {why}: {cmd}" for rx, why in SECRET_ARGS if rx.search(cmd)]
    assert not found, "\n".join(found)


def test_the_parser_reads_a_block_as_the_shell_does(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("text\n<!-- doc-test: skip-line b: why b -->\n```sh\na one \\\n  two  # note\n"
                    "# only a comment\nb 'x # y'\n```\n<!-- doc-test: nonsense -->\n```sh\nc\n```\n")
    one, two = blocks([page])
    assert one.commands() == [(4, "a one    two"), (7, "b 'x # y'")]
    assert one.plan() == [(4, "a one    two", None), (7, "b 'x # y'", "why b")] and one.kind() == "run"
    assert two.bad_markers == [(9, "<!-- doc-test: nonsense -->")]
    # a block inside a list item: its fence, its marker and its lines are indented
    page.write_text("1. step\n\n   <!-- doc-test: skip-line d: why d -->\n   ```sh\n   d one\n     e two\n   ```\n"
                    "   after\n")
    (three,) = blocks([page])
    assert (three.lang, three.line, three.kind()) == ("sh", 4, "run")
    assert three.text == [(5, "d one"), (6, "  e two")]  # the list item's indent goes, the rest stays
    assert three.plan() == [(5, "d one", "why d"), (6, "e two", None)]


# ---------------------------------------------------------------- live, against the local stack

@pytest.fixture(scope="module")
def docenv(stack, tmp_path_factory):
    from conftest import fresh_db, sql
    for target in ("tidb", "mariadb"):
        fresh_db(target, DB)
    res = tmp_path_factory.mktemp("doc-results")
    env = dict(os.environ, mysql_db=DB, results_dir=str(res), GRAFANA_URL="")
    state = {"env": env, "runs": [], "xfailed": []}
    yield state
    named = set()
    for b in sh_blocks():
        for _, cmd in b.commands():
            named |= set(re.findall(r"(?:--mysql-db[ =]|mysql_db=)(sbtest_\w+)", cmd))
    for target in ("tidb", "mariadb"):
        for db in sorted(named | {DB}):
            sql(target, f"DROP DATABASE IF EXISTS {db}")


def fill(cmd, runs):
    """The placeholders TESTID, BASELINE, CANDIDATE: the last run's testid; the last two runs of
    one workload (older first). None when there are not enough runs."""
    if re.search(r"\bTESTID\b", cmd):
        if not runs:
            return None
        cmd = re.sub(r"\bTESTID\b", runs[-1][0], cmd)
    if re.search(r"\b(BASELINE|CANDIDATE)\b", cmd):
        last = runs[-1] if runs else None
        prev = next((r for r in reversed(runs[:-1]) if last and r[1] == last[1]), None)
        if not prev:
            return None
        cmd = re.sub(r"\bBASELINE\b", prev[0], re.sub(r"\bCANDIDATE\b", last[0], cmd))
    return cmd


@pytest.mark.full
@pytest.mark.parametrize("block", runnable())
def test_documented_block_runs_as_written(docenv, block):
    script = ["set -euo pipefail"]
    for n, cmd, reason in block.plan():
        if reason:
            continue
        filled = fill(cmd, docenv["runs"])
        if filled is None:
            msg = f"{block.where}: '{cmd}' needs earlier runs for its placeholders"
            if docenv["xfailed"]:  # an earlier block that would have made them is a known failure
                pytest.xfail(f"{msg}; it depends on {', '.join(docenv['xfailed'])}")
            pytest.fail(msg)
        script.append(filled)
    t0 = time.time()
    p = subprocess.run(["bash", "-c", "\n".join(script)], cwd=ROOT, env=docenv["env"], capture_output=True,
                       text=True, timeout=1200)
    out = p.stdout + p.stderr
    # a run's testid, not a TPC-C prepare's, check's or cleanup's (k6/tpcc.js prints theirs too,
    # with command=...; they write no manifest for a report to read)
    docenv["runs"] += [(t, w) for t, w, c in re.findall(r"testid=(\S+) workload=(\S+)(?: command=(\S+))?", out)
                       if c in ("", "run")]
    print(f"{block.where}: exit {p.returncode} in {time.time() - t0:.0f} s")
    known = [err for text, (err, _) in XFAIL.items() if text in " ".join(script) and err in out]
    if p.returncode != 0 and known:
        docenv["xfailed"].append(block.where)
        raise KnownFailure(f"{block.where}: {known[0]}")
    assert p.returncode == 0, f"{block.where} failed (exit {p.returncode}):\n" + "\n".join(script[1:]) + \
        f"\n--- output (tail)\n{out[-4000:]}"


if __name__ == "__main__":  # the documented commands that do not run here, and why
    for where, cmd, reason in not_run():
        print(f"{where}\t{cmd}\t{reason}")
    sys.exit(0)
