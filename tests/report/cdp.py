"""Open a page in headless Chromium over the DevTools protocol and record what it did.

A tiny stdlib websocket client (text frames only) is enough for the DevTools protocol, so the browser
tests need no extra package. `visit()` returns the requests the page made, console messages, uncaught
exceptions, log entries (CSP violations land there) and a few values evaluated in the page.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

CHROMIUM = next(
    (
        p
        for p in (shutil.which("chromium"), shutil.which("chromium-browser"), shutil.which("google-chrome"))
        if p
    ),
    None,
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--mute-audio",
)
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


class _WebSocket:
    def __init__(self, url: str, timeout: float) -> None:
        u = urlparse(url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(head.decode(errors="replace"))

    def send(self, text: str) -> None:
        payload = text.encode()
        n = len(payload)
        if n < 126:
            header = bytes([0x81, 0x80 | n])
        elif n < 65536:
            header = bytes([0x81, 0x80 | 126]) + n.to_bytes(2, "big")
        else:
            header = bytes([0x81, 0x80 | 127]) + n.to_bytes(8, "big")
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self._read(2), "big")
            elif n == 127:
                n = int.from_bytes(self._read(8), "big")
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise ConnectionError("DevTools closed the websocket")
            if op in (0x9, 0xA):
                continue
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode("utf-8", errors="replace")

    def close(self) -> None:
        self.sock.close()


@dataclass
class Visit:
    requests: list[str] = field(default_factory=list)
    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        out = [json.dumps(e, sort_keys=True)[:500] for e in self.exceptions]
        out += [
            json.dumps(c, sort_keys=True)[:500] for c in self.console if c.get("type") in ("error", "assert")
        ]
        out += [str(e.get("text"))[:500] for e in self.log if e.get("level") == "error"]
        return out


class _Session:
    def __init__(self, ws: _WebSocket) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result") or {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            self.events.append(json.loads(self.ws.recv()))

    def drain(self, seconds: float) -> None:
        self.ws.sock.settimeout(0.2)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                self.events.append(json.loads(self.ws.recv()))
            except TimeoutError:
                continue


def visit(
    page: Path,
    evaluate: dict[str, str],
    *,
    settle: float = 1.0,
    timeout: float = 60.0,
    width: int | None = None,
    media: str | None = None,
) -> Visit:
    """Load `page` (a local file) in a fresh headless Chromium and report what happened.

    `width` sets the viewport width in CSS px (height 1000); `media` emulates a CSS media type ("print").
    """
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="hanglens-cdp-", ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            url = _browser_url(proc, timeout)
            ws = _WebSocket(url, timeout)
            try:
                return _drive(_Session(ws), page, evaluate, settle, timeout, width, media)
            finally:
                ws.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _browser_url(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        m = _LISTENING.search(line)
        if m:
            return m.group(1)
    raise RuntimeError("chromium did not start its DevTools endpoint")


def _drive(
    s: _Session,
    page: Path,
    evaluate: dict[str, str],
    settle: float,
    timeout: float,
    width: int | None,
    media: str | None,
) -> Visit:
    target = s.call("Target.createTarget", url="about:blank")["targetId"]
    sid = s.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Network", "Runtime", "Log", "Page"):
        s.call(f"{domain}.enable", sid)
    if width is not None:
        s.call(
            "Emulation.setDeviceMetricsOverride",
            sid,
            width=width,
            height=1000,
            deviceScaleFactor=1,
            mobile=False,
        )
    if media is not None:
        s.call("Emulation.setEmulatedMedia", sid, media=media)
    s.events.clear()
    s.call("Page.navigate", sid, url=page.resolve().as_uri())
    s.wait_for("Page.loadEventFired", timeout)
    s.drain(settle)
    out = Visit()
    for e in s.events:
        method, params = e.get("method"), e.get("params") or {}
        if method == "Network.requestWillBeSent":
            out.requests.append(str(params.get("request", {}).get("url")))
        elif method == "Runtime.consoleAPICalled":
            out.console.append(
                {
                    "type": params.get("type"),
                    "args": [a.get("value", a.get("description")) for a in params.get("args") or []],
                }
            )
        elif method == "Runtime.exceptionThrown":
            out.exceptions.append(params.get("exceptionDetails") or {})
        elif method == "Log.entryAdded":
            entry = params.get("entry") or {}
            out.log.append({"level": entry.get("level"), "text": entry.get("text"), "url": entry.get("url")})
    for name, expr in evaluate.items():
        res = s.call("Runtime.evaluate", sid, expression=expr, returnByValue=True)
        out.values[name] = (res.get("result") or {}).get("value")
    return out


def screenshot(page: Path, png: Path, *, size: str = "1280,2000", timeout: float = 60.0) -> None:
    """Chromium's own `--screenshot`, the way a person would check the first screen."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="hanglens-shot-", ignore_cleanup_errors=True) as profile:
        subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--screenshot={png}",
                f"--window-size={size}",
                page.resolve().as_uri(),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
