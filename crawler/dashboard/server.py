"""The dashboard's HTTP server: the page, its assets, the JSON state, and (with
``--control``) pause and resume.

The standard library's ``ThreadingHTTPServer`` is enough for an operator's page: a
few clients, one small JSON a few seconds each. The state is computed at most once
a ``CACHE_SECONDS`` whatever the number of open pages, so watching costs Redis a
bounded load. Everything read from Redis goes out as JSON, never as HTML: the page
builds its DOM with ``textContent``. A POST must carry the token in the
``X-Dashboard-Token`` header (compared in constant time); a browser on another
site cannot send that header without a preflight this server never grants, nor
read the page through a name of its own (the ``Host`` header is checked).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import redis

from crawler.crawlstate import controls
from crawler.dashboard.state import read_state

if TYPE_CHECKING:
    from crawler.crawlstate.keys import CrawlKeys

logger = logging.getLogger(__name__)

# Seconds a computed state is served again before Redis is read anew.
CACHE_SECONDS = 1.0
# The assets, shipped as package data (crawler/dashboard/static).
ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}
# The header a POST carries its token in.
TOKEN_HEADER = "X-Dashboard-Token"  # noqa: S105 (a header name, not a secret)
# Headers of every answer: no framing, no sniffing, nothing loaded from elsewhere.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True, slots=True)
class DashboardConfig:
    """The crawl's shards, the hosts each table shows, the page's refresh (s), the
    token of the controls (None: read-only), and the Redis the page reads, as shown
    (password masked, and why that server)."""

    shards: int
    top: int
    refresh: float
    token: str | None
    redis: str = ""


class Dashboard:
    """What the handler serves: the crawl's state (cached), and its controls."""

    def __init__(
        self,
        client: redis.Redis,
        keys: CrawlKeys,
        config: DashboardConfig,
    ) -> None:
        self._client = client
        self._keys = keys
        self.config = config
        self._lock = threading.Lock()
        self._cached: tuple[float, bytes] = (-CACHE_SECONDS, b"")

    def state_json(self) -> bytes:
        """The state as JSON bytes, read from Redis at most once a CACHE_SECONDS."""
        with self._lock:
            at, body = self._cached
            if time.monotonic() - at < CACHE_SECONDS:
                return body
            state = read_state(
                self._client,
                self._keys,
                shards=self.config.shards,
                top=self.config.top,
                now=time.time(),
            )
            state |= {
                "control": self.config.token is not None,
                "refresh": self.config.refresh,
                "redis": self.config.redis,
            }
            body = json.dumps(state, ensure_ascii=True).encode("ascii")
            self._cached = (time.monotonic(), body)
            return body

    def allowed(self, token: str | None) -> bool:
        """Whether *token* is this server's (constant-time); never without one."""
        if self.config.token is None or token is None:
            return False
        return hmac.compare_digest(token.encode(), self.config.token.encode())

    def control(self, action: str) -> bool:
        """Pause or resume the crawl as ``scrapy frontier pause|resume`` do (one
        write to the control hash); False for an unknown *action*."""
        if action == "pause":
            controls.pause(self._client, self._keys)
        elif action == "resume":
            controls.resume(self._client, self._keys)
        else:
            return False
        with self._lock:
            self._cached = (-CACHE_SECONDS, b"")  # the next state shows it
        return True


class DashboardHandler(BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = "crawler-dashboard"
    sys_version = ""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if not self._host_allowed():
            return
        if path == "/state.json":
            try:
                body = self.server.dashboard.state_json()
            except (redis.RedisError, OSError) as exc:
                logger.warning("Crawl state not read: %(error)s", {"error": exc})
                message = f"Redis did not answer: {exc}\n".encode("utf-8", "replace")
                self._send(HTTPStatus.SERVICE_UNAVAILABLE, message, "text/plain")
                return
            self._send(HTTPStatus.OK, body, "application/json")
        elif (asset := ASSETS.get(path)) is not None:
            name, content_type = asset
            body = files("crawler.dashboard").joinpath("static", name).read_bytes()
            self._send(HTTPStatus.OK, body, content_type)
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        dashboard = self.server.dashboard
        if not self._host_allowed():
            return
        if not dashboard.allowed(self.headers.get(TOKEN_HEADER)):
            self._send(HTTPStatus.FORBIDDEN, b"forbidden\n", "text/plain")
            return
        action = path.removeprefix("/control/")
        if path.startswith("/control/") and dashboard.control(action):
            logger.info("Crawl %(action)s from the dashboard", {"action": action + "d"})
            self._send(HTTPStatus.OK, b'{"ok": true}', "application/json")
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")

    def _host_allowed(self) -> bool:
        """Answer 403 (and False) to a request naming another host (see
        ``host_allowed``)."""
        bound = str(self.server.server_address[0])
        if host_allowed(self.headers.get("Host"), bound):
            return True
        self._send(HTTPStatus.FORBIDDEN, b"unknown Host\n", "text/plain")
        return False

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug(format, *args)


class DashboardServer(ThreadingHTTPServer):
    """The HTTP server of one dashboard; its threads are daemons (Ctrl-C ends it)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], dashboard: Dashboard) -> None:
        if ":" in address[0]:  # an IPv6 address (``--host ::1``)
            self.address_family = socket.AF_INET6
        super().__init__(address, DashboardHandler)
        self.dashboard = dashboard

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = host if isinstance(host, str) else host.decode()
        return (
            f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"
        )


def host_allowed(host: str | None, bound: str) -> bool:
    """Whether a request's ``Host`` header names this server as an operator does:
    by an IP address, ``localhost``, or the name it was told to serve on; any name
    when it serves on every address. A page of another site that points its own
    name at this address (DNS rebinding) sends that name, and is refused."""
    if bound in {"0.0.0.0", "::"}:  # noqa: S104 (compared, not bound)
        return True
    try:
        name = urlsplit(f"//{host}").hostname if host else None
    except ValueError:  # "[::1" and the like
        return False
    if name is None:
        return False
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return name == bound.lower()
    return True
