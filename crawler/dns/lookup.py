"""Asking DNS servers: one name's IPv4 addresses, bounded in number and time.

Twisted's own DNS client (``twisted.names.client``) makes the query on the
reactor: no thread, no blocking call, and it falls back to TCP when an answer is
truncated. Chosen over dnspython on measurements (docs/politeness.md#dns): both
answer a loopback server in well under a millisecond, and Twisted's adds no
dependency and runs on any reactor. At most DNS_CONCURRENCY lookups are in flight
in the process; one lookup asks each server in turn, waiting ``try_timeouts`` of
DNS_TIMEOUT, so it ends within DNS_TIMEOUT.

Names in the machine's /etc/hosts (``localhost``) are answered from it, as the
system's resolver would, and never asked of DNS nor shared with other nodes: they
are this machine's.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import TimeoutError as DeferredTimeoutError
from twisted.internet.error import ConnectError
from twisted.names import client, dns
from twisted.names.error import DNSNameError, DomainError

from crawler.policy.dnsanswers import (
    Answer,
    answer_of,
    hosts_table,
    nameservers_of,
    negative_answer,
    try_timeouts,
)

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorCore

    from crawler.policy.dnsanswers import DnsConfig

RESOLV_CONF = Path("/etc/resolv.conf")
HOSTS_FILE = Path("/etc/hosts")
# Seconds past DNS_TIMEOUT after which a lookup is given up whatever the client
# does (it should have ended by then).
GUARD = 1.0


class LookupFailedError(Exception):
    """No server gave an answer (timeout, SERVFAIL, refused, no server at all):
    nothing is known of the name, so nothing is kept."""


class DnsLookup:
    """Asks the DNS servers (DNS_SERVERS, else /etc/resolv.conf's) about names."""

    def __init__(
        self,
        config: DnsConfig,
        servers: tuple[tuple[str, int], ...],
        hosts: dict[str, tuple[str, ...]],
        reactor: IReactorCore,
    ) -> None:
        self._config = config
        self._hosts = hosts
        self._client = (  # Twisted refuses a client without a server
            client.Resolver(  # type: ignore[no-untyped-call]
                servers=list(servers), reactor=reactor
            )
            if servers
            else None
        )
        self._timeouts = try_timeouts(config.timeout)
        self._slots: asyncio.Semaphore | None = None

    @classmethod
    def of(cls, config: DnsConfig, reactor: IReactorCore) -> DnsLookup:
        """The servers DNS_SERVERS names, else the system's; the machine's hosts
        file. A file that cannot be read counts as empty."""
        servers = config.servers or nameservers_of(_read(RESOLV_CONF))
        return cls(config, servers, hosts_table(_read(HOSTS_FILE)), reactor)

    def from_hosts(self, name: str) -> tuple[str, ...] | None:
        """*name*'s addresses in /etc/hosts, or None if it is not there."""
        return self._hosts.get(name)

    async def query(self, name: str) -> Answer:
        """What DNS says of *name* now: its addresses, or a negative answer (no
        such name, no address). ``LookupFailedError`` when no server answered."""
        if self._client is None:
            raise LookupFailedError("no DNS server (DNS_SERVERS, /etc/resolv.conf)")
        if self._slots is None:  # made on the running loop, on first use
            self._slots = asyncio.Semaphore(self._config.concurrency)
        async with self._slots:
            try:
                sections = await asyncio.wait_for(
                    maybe_deferred_to_future(
                        self._client.lookupAddress(  # type: ignore[no-untyped-call]
                            name, timeout=self._timeouts
                        )
                    ),
                    self._config.timeout + GUARD,
                )
            except DNSNameError:
                return negative_answer(self._config, now=time.time())
            except (
                DomainError,
                DeferredTimeoutError,
                TimeoutError,
                OSError,
                ConnectError,
            ) as exc:
                raise LookupFailedError(_reason(exc)) from None
        records = sections[0]
        addresses = [r.payload.dottedQuad() for r in records if r.type == dns.A]
        ttls = [float(r.ttl) for r in records]
        return answer_of(self._config, addresses, ttls, now=time.time())


def _reason(error: BaseException) -> str:
    if isinstance(error, DeferredTimeoutError | TimeoutError):
        return "no answer in time"
    return type(error).__name__


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
