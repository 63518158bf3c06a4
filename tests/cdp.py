"""Headless Chromium (Debian's) driven over the DevTools protocol, for pages that never finish
loading (k6's live web dashboard keeps a server-sent-events stream open, so `--screenshot`
fires before any data arrives). Helpers only; websocket-client (pinned in
scripts/test-setup.d/70-web-dashboard.sh) talks the protocol."""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Chromium:
    def __init__(self, width=1400, height=2200):
        import websocket  # websocket-client
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        assert exe, "chromium is not installed (scripts/test-setup.d/60-report.sh installs it)"
        self.profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        port = free_port()
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", f"--window-size={width},{height}", f"--user-data-dir={self.profile.name}",
             "--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={port}", "about:blank"],
            # its own process group: its renderer and crashpad children go with it on close
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    pages = [t for t in json.load(r) if t["type"] == "page"]
                if pages:
                    break
            except OSError:
                pass
            assert self.proc.poll() is None and time.time() < deadline, "chromium's DevTools did not come up"
            time.sleep(0.3)
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30,
                                              suppress_origin=True)
        self.next_id = 0
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                assert "error" not in msg, f"{method}: {msg['error']}"
                return msg.get("result", {})

    def navigate(self, url, expect=None, timeout=30):
        """Opens url; with `expect`, waits until the page's text contains it (re-opening once)."""
        r = self.call("Page.navigate", url=url)
        assert not r.get("errorText"), f"{url}: {r['errorText']}"
        if not expect:
            return
        deadline = time.time() + timeout
        reloaded = False
        while expect not in self.text():
            if time.time() > deadline - timeout / 2 and not reloaded:
                self.call("Page.navigate", url=url)
                reloaded = True
            assert time.time() < deadline, f"{url}: {expect!r} did not show within {timeout}s: {self.text()[:500]!r}"
            time.sleep(0.5)

    def text(self):
        r = self.call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                      returnByValue=True)
        return r["result"].get("value", "")

    def click_text(self, text):
        """Clicks the first element whose own text is `text` (a tab, a button)."""
        js = ("(() => { const w = document.createTreeWalker(document.body, NodeFilter.SHOW_ELEMENT);"
              f" let n; while ((n = w.nextNode())) {{ if (n.childElementCount === 0 && n.textContent.trim() === {json.dumps(text)})"
              " { n.click(); return true; } } return false; })()")
        return self.call("Runtime.evaluate", expression=js, returnByValue=True)["result"].get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        """Closes the browser over the protocol, then ends its whole process group (helpers that
        outlive the main process keep writing to the profile) and removes the profile."""
        try:
            try:
                self.call("Browser.close")
            except Exception:  # noqa: BLE001 - the browser may already be gone; the group kill below ends it
                pass
            self.ws.close()
        finally:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            for _ in range(20):  # a child killed a moment ago may still be closing its files
                shutil.rmtree(self.profile.name, ignore_errors=True)
                if not os.path.exists(self.profile.name):
                    break
                time.sleep(0.25)
            self.profile.cleanup()
