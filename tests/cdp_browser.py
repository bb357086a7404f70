"""A headless Chromium driven over the Chrome DevTools Protocol, for tests that look at real pages.

Chromium comes from Debian's ``chromium`` package (``tools/setup.sh`` installs it); nothing is
downloaded. The browser listens on 127.0.0.1 only (an ephemeral port it reports in
``DevToolsActivePort``), starts in its own process group with a fresh profile, and :meth:`close`
kills that group by its id, so a failing test leaves no browser behind.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import websocket

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
)


def find_chromium() -> str | None:
    for path in (os.environ.get("SREGYM_CHROMIUM"), *CHROMIUM_CANDIDATES):
        if path and os.access(path, os.X_OK):
            return path
    return shutil.which("chromium")


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, executable: str, *, width: int = 1280, height: int = 900, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="sregym-chromium-")
        self.proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        try:
            port = self._devtools_port()
            targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10, trust_env=False).json()
            page = next(t for t in targets if t.get("type") == "page")
            self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout,
                                                  suppress_origin=True)
            self.call("Page.enable")
            self.call("Runtime.enable")
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.close()
            raise

    def _devtools_port(self) -> int:
        marker = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode} before listening")
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    # ------------------------------------------------------------------ protocol

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)
        raise TimeoutError(method)

    def wait_event(self, method: str) -> dict[str, Any]:
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("method") == method:
                return message
            self.events.append(message)
        raise TimeoutError(method)

    # ------------------------------------------------------------------ page helpers

    def navigate(self, url: str) -> None:
        self.events.clear()
        reply = self.call("Page.navigate", url=url)
        if reply.get("errorText"):
            raise RuntimeError(f"navigation to {url} failed: {reply['errorText']}")
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"page script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def click_and_wait(self, selector_js: str) -> None:
        """Click the element the expression returns (a real activation) and wait for the new page."""
        self.events.clear()
        self.evaluate(f"({selector_js}).click()")
        self.wait_event("Page.loadEventFired")

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}
        data = self.call("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def console_messages(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("method") in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown")]

    # ------------------------------------------------------------------ teardown

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            try:  # a clean exit first: chromium then stops and reaps its own helper processes
                ws.send(json.dumps({"id": next(self._ids), "method": "Browser.close", "params": {}}))
                self.proc.wait(timeout=10)
            except Exception:
                pass
            try:
                ws.close()
            except Exception:
                pass
        if self.proc.poll() is None:
            try:
                self.proc.terminate()
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # helpers that outlived the main process
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)

    def live_processes(self) -> list[int]:
        """Processes of the browser's group that still run (zombies left to init do not count)."""
        return live_group_members(self.proc.pid)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()


def live_group_members(pgid: int) -> list[int]:
    """PIDs in process group ``pgid`` that are not zombies, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp ...
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members
