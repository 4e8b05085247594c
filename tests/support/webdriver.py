"""A small W3C WebDriver client over the standard library, for the browser tests.

Debian's `chromedriver` (package chromium-driver) drives Debian's `chromium`
headless; this speaks WebDriver's JSON-over-HTTP to it, so the tests need no
Python package beyond the standard library. Every call has a timeout; `close`
ends the session, chromedriver and every browser process it started.

    with Browser.start() as browser:
        browser.get(url)
        browser.wait_for("return document.title", timeout=10)
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

from netdsl.training.scale.launch import reserved_port

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
# The flags that work on these machines (no sandbox as root, no GPU, no calls home).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the key WebDriver names an element by
CALL_TIMEOUT = 30  # seconds any one WebDriver call may take


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if CHROMIUM is None:
        return "Debian's chromium is not installed (apt-get install chromium chromium-driver; make test does)"
    if CHROMEDRIVER is None:
        return "chromedriver is not installed (apt-get install chromium-driver; make test does)"
    return None


class WebDriverError(Exception):
    pass


class Browser:
    def __init__(self, driver: subprocess.Popen, port: int, profile: str):
        self.driver, self.port, self.profile = driver, port, profile
        self.session: str | None = None

    @classmethod
    def start(cls, startup_timeout: float = 30.0) -> Browser:
        profile = tempfile.mkdtemp(prefix="netdsl-chromium-")
        with reserved_port() as port:  # no other process takes it before chromedriver listens on it
            driver = subprocess.Popen(
                [CHROMEDRIVER, f"--port={port}"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            browser = cls(driver, port, profile)
            try:
                browser._wait_until_ready(startup_timeout)
            except BaseException:
                browser.close()
                raise
        try:
            options = {"binary": CHROMIUM, "args": [*FLAGS, f"--user-data-dir={profile}"]}
            created = browser._call(
                "POST",
                "/session",
                {
                    "capabilities": {
                        "alwaysMatch": {
                            "browserName": "chrome",
                            "goog:chromeOptions": options,
                            "pageLoadStrategy": "normal",
                        }
                    }
                },
            )
            browser.session = created["sessionId"]
        except BaseException:
            browser.close()
            raise
        return browser

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self._call("GET", "/status", timeout=2).get("ready"):
                    return
            except (OSError, WebDriverError):
                pass
            if time.monotonic() > deadline or self.driver.poll() is not None:
                raise WebDriverError("chromedriver did not start")
            time.sleep(0.1)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ commands
    def get(self, url: str) -> None:
        self._session("POST", "/url", {"url": url})

    def script(self, source: str, *args: Any) -> Any:
        """Run `source` as a function body in the page; its `return` value comes back."""
        return self._session("POST", "/execute/sync", {"script": source, "args": list(args)})

    def wait_for(self, source: str, *args: Any, timeout: float = 10.0, interval: float = 0.02) -> Any:
        """Run `source` until it returns something truthy (and return that); WebDriverError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.script(source, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise WebDriverError(f"timed out after {timeout} s waiting for: {source}")
            time.sleep(interval)

    def find(self, css: str) -> str:
        found = self._session("POST", "/element", {"using": "css selector", "value": css})
        if not isinstance(found, dict) or ELEMENT not in found:
            raise WebDriverError(f"no element {css!r}: {found!r}")
        return found[ELEMENT]

    def click(self, css: str) -> None:
        """A real click (the browser's input pipeline), at the middle of the element."""
        self._session("POST", f"/element/{self.find(css)}/click", {})

    def screenshot(self, path: str | os.PathLike) -> None:
        with open(path, "wb") as f:
            f.write(base64.b64decode(self._session("GET", "/screenshot")))

    # ------------------------------------------------------------ plumbing
    def _session(self, method: str, path: str, body: dict | None = None) -> Any:
        return self._call(method, f"/session/{self.session}{path}", body)

    def _call(self, method: str, path: str, body: dict | None = None, timeout: float = CALL_TIMEOUT) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            answer = json.loads(exc.read() or b"{}")
            value = answer.get("value", {})
            raise WebDriverError(f"{value.get('error', exc.code)}: {value.get('message', '')[:300]}") from None
        return answer.get("value")

    def close(self) -> None:
        """End the session (the browser quits), then chromedriver and anything left in its process group."""
        if self.session is not None:
            try:
                self._call("DELETE", f"/session/{self.session}", timeout=10)
            except (OSError, WebDriverError):
                pass
            self.session = None
        if self.driver.poll() is None:
            try:
                os.killpg(self.driver.pid, signal.SIGTERM)
                self.driver.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.driver.pid, signal.SIGKILL)
                self.driver.wait(timeout=10)
        try:
            os.killpg(self.driver.pid, signal.SIGKILL)  # a browser process that outlived its driver
        except ProcessLookupError:
            pass
        shutil.rmtree(self.profile, ignore_errors=True)
