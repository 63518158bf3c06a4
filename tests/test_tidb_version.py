"""Issue #45 item 7: the local TiDB's honest name. Our tidb-server is built from a Go module
pseudo-version (v1.1.0-beta.0.<date>-<commit>, the newest tag Go could use, not a release);
scripts/lib/versions.sh says which TiDB that is, its release line and commit, and scripts/build
links that into tidb_version(), which the manifests, reports and dashboards read."""
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT
from tidbbench import selectors
from tidbbench.history.store import git_hash
from tidbbench.report.fmt import short_version

pytestmark = pytest.mark.fast

# what k6/lib/target.js takes as the version from tidb_version()
TARGET_JS_RELEASE = re.compile(r"Release Version:\s*(\S+)")


def versions():
    """scripts/lib/versions.sh as bash reads it (it derives some values from others)."""
    names = ("TIDB_MODULE_VERSION", "TIDB_RELEASE_LINE", "TIDB_GIT_HASH", "TIDB_GIT_BRANCH", "TIDB_RELEASE")
    out = subprocess.run(["bash", "-c", ". scripts/lib/versions.sh; " + "; ".join(f'echo "${n}"' for n in names)],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()
    return dict(zip(names, out))


def ldflags():
    p = subprocess.run([str(ROOT / "scripts/build"), "--tidb-ldflags"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return dict(re.findall(r"-X '([\w./]+)=([^']*)'", p.stdout))


def test_the_build_links_the_release_line_and_commit():
    v = versions()
    commit = v["TIDB_MODULE_VERSION"].rsplit("-", 1)[1]
    assert re.fullmatch(r"[0-9a-f]{12}", commit)
    flags = ldflags()
    release = flags["github.com/pingcap/tidb/pkg/parser/mysql.TiDBReleaseVersion"]
    assert release == f"v{v['TIDB_RELEASE_LINE']}-{commit}+go-module-proxy" == v["TIDB_RELEASE"]
    assert flags["github.com/pingcap/tidb/pkg/util/versioninfo.TiDBGitHash"] == commit
    assert flags["github.com/pingcap/tidb/pkg/util/versioninfo.TiDBGitBranch"] == f"release-{v['TIDB_RELEASE_LINE']}"
    # no trace of the pseudo-version's fake base in what TiDB reports
    assert "v1.1.0" not in " ".join(flags.values())


def test_the_rest_of_the_code_reads_that_name():
    """What tidb_version() prints with those flags, as each reader takes it."""
    v = versions()
    full = (f"Release Version: {v['TIDB_RELEASE']}\nEdition: Community\nGit Commit Hash: {v['TIDB_GIT_HASH']}\n"
            f"Git Branch: {v['TIDB_GIT_BRANCH']}\nUTC Build Time: 2026-12-01 20:00:00\nStore: unistore")
    version = TARGET_JS_RELEASE.search(full).group(1)
    assert version == v["TIDB_RELEASE"]  # one word: the whole release
    # the report's title and Version row: the line and the commit, without the build metadata
    assert short_version("tidb", version) == f"v{v['TIDB_RELEASE_LINE']}-{v['TIDB_GIT_HASH']}" == "v8.5-e4e814fdc0af"
    # dashboards tell TiDB's runs from MySQL's by the version label
    sel = selectors.SEL["version_tidb"]
    assert sel.startswith('version=~"') and re.fullmatch(sel.split('"')[1], version)
    # the history store's commit
    assert git_hash({"version_full": full, "version": version}) == v["TIDB_GIT_HASH"]


def test_the_release_line_is_the_modules():
    """The module source says which line its commit is on: TiDB's bootstrap versions have a range
    reserved for each LTS line's patches, and a release branch stops inside its own range."""
    v = versions()
    p = subprocess.run(["go", "mod", "download", "-json", f"github.com/pingcap/tidb@{v['TIDB_MODULE_VERSION']}"],
                       cwd="/tmp", capture_output=True, text=True,
                       env={**os.environ, "GOFLAGS": os.environ["GOFLAGS"] + " -mod=mod", "GOSUMDB": "off"}, timeout=600)
    assert p.returncode == 0, p.stderr
    src = (open(os.path.join(json.loads(p.stdout)["Dir"], "pkg/session/bootstrap.go"), encoding="utf-8").read())
    line = v["TIDB_RELEASE_LINE"]
    m = re.search(rf"\[version(\d+), version(\d+)\] is the version range reserved for patches of {re.escape(line)}\.x",
                  src)
    assert m, f"bootstrap.go reserves no version range for {line}.x patches"
    current = int(re.search(r"currentBootstrapVersion int64 = version(\d+)", src).group(1))
    assert int(m.group(1)) <= current <= int(m.group(2)), (current, m.groups())
