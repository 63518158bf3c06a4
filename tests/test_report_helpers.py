"""Helpers (no tests here) for tests/test_report*.py: running scripts/report and scripts/sweep, a replay
server for recorded Prometheus answers (golden test), a stand-in Grafana render endpoint,
headless Chromium screenshots, and reading the report's tables back."""
import io
import json
import re
import shutil
import subprocess
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests/golden/report"


def run_report(*args, env=None, timeout=300):
    import os
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([str(ROOT / "scripts/report"), *args], capture_output=True, text=True,
                          env=e, timeout=timeout, cwd=ROOT)


def run_sweep(*args, timeout=600):
    return subprocess.run([str(ROOT / "scripts/sweep"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


class _Server:
    def __init__(self, handler):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def prometheus_replay(answers_file=GOLDEN / "prometheus.json"):
    """A local HTTP server answering /api/v1/query and /api/v1/status/buildinfo with the
    recorded JSON for exactly the recorded (path, params); anything else is a 400 and is
    listed in .misses."""
    answers = {}
    for e in json.loads(Path(answers_file).read_text()):
        answers[(e["path"], json.dumps(e["params"], sort_keys=True))] = e["response"]
    misses = []

    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            u = urllib.parse.urlsplit(self.path)
            params = dict(urllib.parse.parse_qsl(u.query))
            body = answers.get((u.path, json.dumps(params, sort_keys=True)))
            if body is None:
                misses.append((u.path, params))
                body, code = {"status": "error", "errorType": "bad_data", "error": "not recorded"}, 400
            else:
                code = 200
            reply(self, code, json.dumps(body).encode(), "application/json")

        def log_message(self, *a):
            pass

    s = _Server(H)
    s.misses = misses
    return s


def reply(handler, code, data, ctype):
    """Sends one whole HTTP answer from a stand-in server's handler."""
    handler.send_response(code)
    handler.send_header("Content-Type", ctype)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def png_bytes(w=200, h=80, color=(31, 119, 180)):
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (w, h), color).save(buf, format="PNG")
    return buf.getvalue()


def grafana_standin():
    """A stand-in for Grafana's /api/health and /render/d-solo/... (there is no Grafana on
    this machine): answers every render with a small PNG and keeps the request paths."""
    requests = []
    png = png_bytes()

    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append((self.path, self.headers.get("Authorization")))
            if self.path == "/api/health":
                reply(self, 200, b'{"database":"ok","version":"stand-in"}', "application/json")
            elif self.path.startswith("/render/d-solo/"):
                reply(self, 200, png, "image/png")
            else:
                reply(self, 404, b"", "text/plain")

        def log_message(self, *a):
            pass

    s = _Server(H)
    s.requests = requests
    return s


def chromium_screenshot(html_file, png_file, size="1200,2000"):
    """Renders a local HTML file in headless Chromium (Debian's) to a PNG."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is not installed (scripts/test-setup.d/60-report.sh installs it)"
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:  # chromium helpers may outlive it a moment
        p = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                            "--disable-background-networking", "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={profile}", f"--screenshot={png_file}", f"--window-size={size}",
                            "--hide-scrollbars", Path(html_file).resolve().as_uri()],
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and Path(png_file).is_file(), f"chromium failed ({p.returncode}):\n{p.stderr[-2000:]}"
    return Path(png_file)


def decode_png(path):
    """The image (Pillow), fully decoded: raises if the file is not a valid PNG."""
    from PIL import Image
    with Image.open(path) as im:
        assert im.format == "PNG", f"{path} is {im.format}, not PNG"
        im.load()
        return im.convert("RGB")


def ink_fraction(im):
    """Share of pixels that are not (near) white."""
    gray = im.convert("L")
    hist = gray.histogram()
    return 1 - sum(hist[245:]) / (im.width * im.height)


def count_color(im, rgb, tol=30):
    """Pixels within tol (per channel) of rgb."""
    import numpy as np
    a = np.asarray(im.convert("RGB"), dtype=np.int16)
    return int((np.abs(a - np.array(rgb, dtype=np.int16)) <= tol).all(axis=2).sum())


def md_tables_after(md, heading):
    """The markdown tables in the section that starts with `heading` (up to the next heading
    of the same or a higher level): [[header, row, ...]] with cells as strings."""
    lines = md.splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    start = lines.index(heading)
    end = len(lines)
    for i in range(start + 1, len(lines)):
        m = re.match(r"^(#+) ", lines[i])
        if m and len(m.group(1)) <= level:
            end = i
            break
    tables, cur = [], None
    for line in lines[start + 1:end]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(re.match(r"^-+:?$", c) for c in cells):
                continue
            if cur is None:
                cur = []
                tables.append(cur)
            cur.append(cells)
        else:
            cur = None
    return tables


def k6_summary_table(stdout):
    """k6's own per-step table (k6/lib/summary.js: Threads | QPS | TPS | p95 | avg | errors |
    reconnects): {threads: (qps, tps, p95, avg)}."""
    out = {}
    for m in re.finditer(r"^\| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| \d+ \|(?: \d+ \|)?$", stdout, re.M):
        out[int(m.group(1))] = tuple(float(m.group(i)) for i in range(2, 6))
    return out
