"""PNG snapshots of the benchmark dashboard's panels through Grafana's render API
(/render/d-solo/<uid>?panelId=..&from=..&to=..&var-testid=..), when a Grafana with the
image renderer is reachable. Any failure turns into a reason the report prints."""
import base64
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from tidbbench import ROOT

DASHBOARD_UID = "tbs-benchmark-run"
DASHBOARD_FILE = ROOT / "grafana/dashboards/benchmark/benchmark-run.json"
# the panels a report shows, by title (ids are read from the dashboard's JSON)
PANEL_TITLES = ["QPS by thread step", "p95 and p99 latency", "Mean latency", "Errors by code"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MARGIN_MS = 5000


def password_in_argument(url):
    """The error for a --grafana URL given on the command line with a password in it (a process'
    arguments are visible to every user of the host: `ps`), else None."""
    u = urllib.parse.urlsplit(url or "")
    if u.password is None:
        return None
    user = u.username or "admin"
    return (f"--grafana {u.scheme}://{user}:***@{u.hostname}{f':{u.port}' if u.port else ''}: a password in an "
            "argument shows in the process list; give the user in the URL "
            f"(--grafana {u.scheme}://{user}@{u.hostname}{f':{u.port}' if u.port else ''}) and the password by "
            "file (--grafana-password-file FILE or GRAFANA_PASSWORD_FILE), or a token in GRAFANA_TOKEN")


def with_password_file(url, path):
    """`url` with the password read from `path` (its first line) as the URL's user's password
    (default user admin); ValueError naming the file when it cannot be read."""
    try:
        text = Path(path).read_text().strip()
    except OSError as e:
        raise ValueError(f"cannot read the Grafana password file {path}: {e.strerror}")
    pw = text.splitlines()[0].strip() if text else ""
    if not pw:
        raise ValueError(f"the Grafana password file {path} is empty")
    u = urllib.parse.urlsplit(url)
    user = urllib.parse.quote(urllib.parse.unquote(u.username or "admin"), safe="")
    host = (u.hostname or "") + (f":{u.port}" if u.port else "")
    return urllib.parse.urlunsplit(u._replace(netloc=f"{user}:{urllib.parse.quote(pw, safe='')}@{host}"))


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):  # Grafana redirects to a placeholder image without a renderer
        return None


def panels(dashboard_file=DASHBOARD_FILE):
    """[(panel id, title)] of the dashboard's panels named in PANEL_TITLES."""
    d = json.loads(dashboard_file.read_text())
    found = {}
    stack = list(d.get("panels", []))
    while stack:
        p = stack.pop(0)
        stack.extend(p.get("panels", []))
        if p.get("type") != "row" and p.get("title") in PANEL_TITLES:
            found.setdefault(p["title"], p["id"])
    return [(found[t], t) for t in PANEL_TITLES if t in found]


class Grafana:
    def __init__(self, url, timeout=60):
        u = urllib.parse.urlsplit(url.rstrip("/"))
        self.headers = {}
        if u.username:
            cred = f"{urllib.parse.unquote(u.username)}:{urllib.parse.unquote(u.password or '')}"
            self.headers["Authorization"] = "Basic " + base64.b64encode(cred.encode()).decode()
            u = u._replace(netloc=u.hostname + (f":{u.port}" if u.port else ""))
        if os.environ.get("GRAFANA_TOKEN"):
            self.headers["Authorization"] = "Bearer " + os.environ["GRAFANA_TOKEN"]
        self.url = urllib.parse.urlunsplit(u)
        self.timeout = timeout
        self.opener = urllib.request.build_opener(NoRedirect)

    def _get(self, path, timeout=None):
        req = urllib.request.Request(self.url + path, headers=self.headers)
        with self.opener.open(req, timeout=timeout or self.timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()

    def health(self):
        """None when Grafana answers, else the reason."""
        try:
            status, _, body = self._get("/api/health", timeout=5)
            if status != 200:
                return f"Grafana at {self.url} answered HTTP {status} on /api/health"
            return None
        except urllib.error.HTTPError as e:
            return f"Grafana at {self.url} answered HTTP {e.code} on /api/health"
        except (urllib.error.URLError, OSError) as e:
            return f"Grafana at {self.url} is not reachable ({getattr(e, 'reason', e)})"

    @staticmethod
    def render_path(panel_id, testid, start_ms, end_ms, width=1000, height=400):
        q = urllib.parse.urlencode({
            "orgId": 1, "panelId": panel_id, "from": int(start_ms), "to": int(end_ms),
            "var-testid": testid, "width": width, "height": height, "tz": "UTC",
        })
        return f"/render/d-solo/{DASHBOARD_UID}?{q}"

    def render(self, panel_id, testid, start_ms, end_ms):
        """(png bytes, None) or (None, reason)."""
        path = self.render_path(panel_id, testid, start_ms, end_ms)
        try:
            status, ctype, body = self._get(path)
        except urllib.error.HTTPError as e:
            detail = ""
            try:
                detail = e.read().decode(errors="replace")[:200].strip()
            except Exception:
                pass
            if 300 <= e.code < 400:
                return None, f"Grafana at {self.url} has no image renderer (render redirected, HTTP {e.code})"
            return None, f"Grafana at {self.url} could not render panel {panel_id} (HTTP {e.code}{': ' + detail if detail else ''})"
        except (urllib.error.URLError, OSError) as e:
            return None, f"Grafana at {self.url} did not render panel {panel_id} ({getattr(e, 'reason', e)})"
        if not body.startswith(PNG_MAGIC):
            return None, f"Grafana at {self.url} answered panel {panel_id} with {ctype or 'something'} instead of a PNG"
        return body, None


def snapshots(url, runs, outdir):
    """Renders the panels of every run into outdir/snapshots/. Returns (items, reason):
    items = [(run, [(panel title, relative path)])], reason = why snapshots were skipped."""
    if not url:
        return [], ("no Grafana URL was given (--grafana URL or GRAFANA_URL); the local stack runs Grafana "
                    "only when a grafana-server is on PATH")
    g = Grafana(url)
    reason = g.health()
    if reason:
        return [], reason
    try:
        plist = panels()
    except (OSError, ValueError) as e:
        return [], f"cannot read the dashboard {DASHBOARD_FILE}: {e}"
    if not plist:
        return [], f"the dashboard {DASHBOARD_UID} has none of the panels {', '.join(PANEL_TITLES)}"
    items = []
    (outdir / "snapshots").mkdir(exist_ok=True)
    for run in runs:
        start = (run.manifest.get("run_start") or run.steps[0]["window"]["step_start"]) - MARGIN_MS
        end = (run.manifest.get("run_end") or run.steps[-1]["window"]["measure_end"]) + MARGIN_MS
        shots = []
        for pid, title in plist:
            png, why = g.render(pid, run.testid, start, end)
            if why:
                return [], why
            slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
            rel = f"snapshots/{run.testid}-{slug}.png"
            (outdir / rel).write_bytes(png)
            shots.append((title, rel))
        items.append((run, shots))
    return items, None
