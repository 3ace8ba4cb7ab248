"""A simulated web (``bench.simweb``) served on loopback, one address per host.

One asyncio server in a thread of the benchmark's own process listens on every
host's address (127.77.x.y) on one port. A page is a small HTML document whose
links are the web's out-links (absolute URLs with the hosts' names, which the
crawl resolves with ``bench.importancedns``); anything else is a 404. Each
response waits a latency drawn from a range first (the network the simulation
models; the wait costs no CPU), and is logged, with its time, before it is sent:
the order of first fetches is read from this log, at the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Iterator

    from bench.simweb import Web

START_TIMEOUT = 30.0
FILLER = (
    "<p>" + "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 12 + "</p>"
)


@dataclass(frozen=True, slots=True)
class Hit:
    """One response the site sent: when (epoch s), the page (-1: none) and status."""

    time: float
    page: int
    status: int
    path: str


class SimSite:
    """Serves *web* on *port* of every host's address until ``stop``."""

    def __init__(
        self, web: Web, port: int, latency: tuple[float, float], seed: int = 1
    ) -> None:
        self.web = web
        self.port = port
        self.latency = latency
        self.rng = random.Random(seed)
        addresses = web.addresses()
        self.host_at = {address: host for host, address in addresses.items()}
        self.index = {
            (web.hosts[web.host_of[page]], web.paths[page]): page
            for page in range(len(web.paths))
        }
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._servers: list[asyncio.Server] = []

    def start(self) -> SimSite:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            raise TimeoutError(f"the site did not start in {START_TIMEOUT:.0f} s")
        if self._error is not None:
            raise RuntimeError(f"the site did not start: {self._error}")
        return self

    def stop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT)

    def take_hits(self) -> list[Hit]:
        """Every response logged since the last call, in the order sent."""
        with self._lock:
            hits, self.hits = self.hits, []
        return hits

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            for address in self.host_at:
                server = self._loop.run_until_complete(
                    asyncio.start_server(self._serve, address, self.port, backlog=64)
                )
                self._servers.append(server)
        except OSError as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            for server in self._servers:
                server.close()
            self._loop.run_until_complete(asyncio.sleep(0))
            self._loop.close()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        host = self.host_at.get(writer.get_extra_info("sockname")[0], "")
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ", 2)[1].decode("latin-1")
                keep = b"connection: close" not in head.lower()
                await asyncio.sleep(self.rng.uniform(*self.latency))
                writer.write(self._answer(host, target, keep))
                await writer.drain()
                if not keep:
                    break
        writer.close()

    def _answer(self, host: str, target: str, keep: bool) -> bytes:
        parts = urlsplit(target)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        page = self.index.get((host, path), -1)
        status = 200 if page >= 0 else 404
        body = self._page(page).encode() if page >= 0 else b"not found\n"
        with self._lock:
            self.hits.append(Hit(time.time(), page, status, f"{host}{path}"))
        kind = "text/html; charset=utf-8" if page >= 0 else "text/plain"
        head = (
            f"HTTP/1.1 {status} {'OK' if page >= 0 else 'Not Found'}\r\n"
            f"Content-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep else 'close'}\r\n\r\n"
        )
        return head.encode() + body

    def _page(self, page: int) -> str:
        web = self.web
        links = "\n".join(
            f'<li><a href="{escape(web.url(t, self.port))}">{escape(web.paths[t])}</a>'
            for t in web.links[page]
        )
        title = escape(web.url(page))
        return (
            f"<!doctype html><html><head><title>{title}</title></head><body>"
            f"<h1>{title}</h1>{FILLER}<ul>\n{links}\n</ul></body></html>"
        )


@contextlib.contextmanager
def serving(
    web: Web, port: int, latency: tuple[float, float] = (0.02, 0.1)
) -> Iterator[SimSite]:
    """*web* served until the block ends."""
    site = SimSite(web, port, latency).start()
    try:
        yield site
    finally:
        site.stop()
