"""A DNS server for the tests, on a loopback UDP port, logging every query.

dnslib's server in a thread of the test process: test names answer A records of
127.0.0.x with a short TTL, ``slow.<anything>`` answers after a delay, any other
name is NXDOMAIN, and every query is logged with its time, so a test counts what
the server saw (never what the crawler says it asked).
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dnslib import QTYPE, RCODE, RR, A
from dnslib.server import BaseResolver, DNSLogger, DNSServer

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping


@dataclass
class ZoneResolver(BaseResolver):  # type: ignore[misc]
    """Answers *zone*'s names with their address and *ttl*; logs each query."""

    zone: Mapping[str, str]
    ttl: int
    slow: float = 0.0
    queries: list[tuple[float, str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def resolve(self, request: Any, handler: Any) -> Any:
        name = str(request.q.qname).rstrip(".").lower()
        kind = QTYPE[request.q.qtype]
        with self._lock:
            self.queries.append((time.time(), name, kind))
        if name.startswith("slow.") and self.slow:
            time.sleep(self.slow)
        reply = request.reply()
        address = self.zone.get(name)
        if address is None:
            reply.header.rcode = RCODE.NXDOMAIN
        elif kind == "A":
            reply.add_answer(RR(name, QTYPE.A, rdata=A(address), ttl=self.ttl))
        return reply

    def asked(self, name: str) -> list[float]:
        """When *name* was asked, in order."""
        with self._lock:
            return [t for t, asked, _ in self.queries if asked == name]


@dataclass(frozen=True)
class RunningDns:
    resolver: ZoneResolver
    port: int

    @property
    def server(self) -> str:
        """The DNS_SERVERS value that points at this server."""
        return f"127.0.0.1:{self.port}"


@contextlib.contextmanager
def running_dns(
    zone: Mapping[str, str], *, ttl: int = 2, slow: float = 0.0
) -> Iterator[RunningDns]:
    """Serve *zone* on 127.0.0.1 (a free UDP port) until the block ends."""
    resolver = ZoneResolver(dict(zone), ttl, slow)
    server = DNSServer(
        resolver, address="127.0.0.1", port=0, logger=DNSLogger("error", prefix=False)
    )
    server.start_thread()
    try:
        yield RunningDns(resolver, server.server.server_address[1])
    finally:
        server.stop()
        server.server.server_close()
        server.thread.join(timeout=5)
