"""CrawlResolver: the reactor's name resolver, which every fetch's connection asks.

Scrapy installs it from ``TWISTED_DNS_RESOLVER`` (the add-on's default) when its
crawler process starts the reactor, with ``installNameResolver``: Twisted's
``HostnameEndpoint``, which Scrapy's HTTP/1.1 and HTTP/2 download handlers connect
through, asks ``reactor.nameResolver``, and Twisted's simple ``reactor.resolver``
is made to ask it too. It is one per process; a crawl lends it its Redis cache and
its stats while its spider runs (``crawler.dns.sharing.DnsSharing``).

An address (``127.0.0.2``) is never asked of DNS, a name of /etc/hosts is
answered from it, and any other name comes from this process' answers, else from
the crawl's shared ones, else from one lookup (``crawler.dns.lookup``); lookups of
one name at once in this process are one lookup. A name without addresses (no
such name, no address, no answer in time) ends the resolution empty, which
Twisted turns into the ``DNSLookupError`` whose fate is ``network_error``, tried
again later as every failure that may pass (``RetryLaterMiddleware``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from typing import TYPE_CHECKING, Any, Literal

import idna
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IHostnameResolver, IHostResolution
from zope.interface import implementer  # type: ignore[import-untyped]

from crawler.context.logonce import OnceLogger
from crawler.dns.cache import LocalAnswers
from crawler.dns.lookup import DnsLookup, LookupFailedError
from crawler.policy.dnsanswers import DnsConfig, dns_name, ip_literal

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    from scrapy.statscollectors import StatsCollector
    from twisted.internet.interfaces import IAddress
    from twisted.python.failure import Failure

    from crawler.dns.cache import SharedAnswers
    from crawler.policy.dnsanswers import Answer

logger = logging.getLogger(__name__)


@implementer(IHostResolution)
class _Resolution:
    def __init__(self, name: str) -> None:
        self.name = name

    def cancel(self) -> None:
        """Nothing to cancel: the lookup ends within DNS_TIMEOUT on its own."""


class CrawlDns:
    """What one crawl lends the resolver: its stats and its shared answers."""

    def __init__(self, stats: StatsCollector, shared: SharedAnswers) -> None:
        self.stats = stats
        self.shared = shared


@implementer(IHostnameResolver)
class CrawlResolver:
    """The process' resolver; see the module's docstring."""

    def __init__(self, reactor: Any, config: DnsConfig, lookup: DnsLookup) -> None:
        self.reactor = reactor
        self._lookup = lookup
        self._local = LocalAnswers(config.local_size)
        self._pending: dict[str, asyncio.Task[Answer]] = {}
        self._crawl: CrawlDns | None = None
        self._once = OnceLogger(logger)

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> Self | UninstalledResolver:
        """Scrapy passes its crawler process (only ``.settings`` is read). A bad
        DNS setting installs nothing: the crawl's ``DnsSharing`` stops it in one
        line."""
        try:
            config = DnsConfig.from_settings(crawler.settings)
        except ValueError:
            return UninstalledResolver()
        return cls(reactor, config, DnsLookup.of(config, reactor))

    def install_on_reactor(self) -> None:
        self.reactor.installNameResolver(self)

    def serve(self, crawl: CrawlDns) -> None:
        """Count in *crawl*'s stats and share answers through its Redis."""
        self._crawl = crawl

    def leave(self, crawl: CrawlDns) -> None:
        """*crawl* is over: answers are this process' alone again."""
        if self._crawl is crawl:
            self._crawl = None

    def resolveHostName(
        self,
        resolutionReceiver: Any,  # an IResolutionReceiver
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> Any:  # an IHostResolution
        resolution = _Resolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        done = deferred_from_coro(self.addresses(hostName))
        done.addCallback(
            _deliver, resolutionReceiver, portNumber, addressTypes, transportSemantics
        )
        done.addErrback(self._unexpected, resolutionReceiver, hostName)
        return resolution

    async def addresses(self, host: str) -> tuple[str, ...]:
        """*host*'s addresses; none when it has none or no server answered."""
        literal = ip_literal(host)
        if literal is not None:
            return (literal,)
        name = dns_name(_ascii(host))
        if name is None:
            self._stats().inc_value("dns/failures")
            return ()
        if (listed := self._lookup.from_hosts(name)) is not None:
            return listed
        try:
            return (await self.answer(name)).addresses
        except LookupFailedError:
            return ()

    async def ahead(self, host: str) -> bool:
        """Resolve *host* before its fetch asks; whether it took more than this
        process' memory (a shared answer or a lookup). Addresses, names of
        /etc/hosts and hosts that are no name are left alone (and not counted)."""
        name = None if ip_literal(host) is not None else dns_name(_ascii(host))
        if name is None or self._lookup.from_hosts(name) is not None:
            return False
        if self._local.get(name, time.time()) is not None:
            return False
        with contextlib.suppress(LookupFailedError):
            await self.answer(name)
        return True

    async def answer(self, name: str) -> Answer:
        """*name*'s answer: this process', else the crawl's, else a lookup (one
        at a time per name). ``LookupFailedError`` when no server answered."""
        found = self._local.get(name, time.time())
        if found is None and (pending := self._pending.get(name)) is not None:
            found = await asyncio.shield(pending)
        if found is not None:
            self._count_hit(found)
            return found
        task = asyncio.ensure_future(self._resolve(name))
        self._pending[name] = task
        task.add_done_callback(lambda _: self._pending.pop(name, None))
        return await asyncio.shield(task)

    async def _resolve(self, name: str) -> Answer:
        crawl = self._crawl
        if crawl is None:
            answer = await self._ask(name)
        else:
            answer, asked = await crawl.shared.answer(name, lambda: self._ask(name))
            if not asked:
                self._count_hit(answer)
        self._local.put(name, answer)
        return answer

    async def _ask(self, name: str) -> Answer:
        """One lookup, counted and timed; a failure is logged once."""
        self._stats().inc_value("dns/lookups")
        started = time.monotonic()
        try:
            return await self._lookup.query(name)
        except LookupFailedError as exc:
            self._stats().inc_value("dns/failures")
            self._once.once(
                "failure",
                "DNS lookup of %(name)s failed (%(reason)s); its requests are "
                "tried again later, and further failures only counted in "
                "dns/failures",
                {"name": name, "reason": exc},
            )
            raise
        finally:
            elapsed = round((time.monotonic() - started) * 1000)
            self._stats().inc_value("dns/lookup_ms_total", elapsed)

    def _count_hit(self, answer: Answer) -> None:
        if answer.negative:
            self._stats().inc_value("dns/negative_hits")
        else:
            self._stats().inc_value("dns/cache_hits")

    def _stats(self) -> StatsCollector | _NoStats:
        """The stats of the crawl lent to the resolver; none without one."""
        return _NoStats() if self._crawl is None else self._crawl.stats

    def _unexpected(self, failure: Failure, receiver: Any, name: str) -> None:
        """A bug or a Redis error that is no outage: logged, and the fetch fails
        as a DNS failure rather than hang."""
        logger.error(
            "Resolving %(name)s failed: %(error)s",
            {"name": name, "error": failure.getTraceback()},
        )
        receiver.resolutionComplete()


class _NoStats:
    """Counts nothing: no crawl is lent to the resolver."""

    def inc_value(self, key: str, count: int = 1) -> None:
        return


class UninstalledResolver:
    """Stands in for ``CrawlResolver`` when a DNS setting is bad: installs nothing
    (the crawl stops at start anyway)."""

    def install_on_reactor(self) -> None:
        return


def _ascii(host: str) -> str:
    """*host* as DNS knows it: Twisted hands over an IDN host decoded
    (``bücher.example``), from the URL's ``xn--`` form, with the ``idna``
    package; encoded back with it. A host it refuses stays as it is (and is
    then no name)."""
    if host.isascii():
        return host
    try:
        return str(idna.encode(host), "ascii")
    except idna.IDNAError:
        return host


def _deliver(
    addresses: tuple[str, ...],
    receiver: Any,  # an IResolutionReceiver
    port: int,
    types: Sequence[type[IAddress]] | None,
    semantics: str,
) -> None:
    kind: Literal["TCP", "UDP"] = "UDP" if semantics == "UDP" else "TCP"
    for address in addresses:
        family = IPv6Address if ":" in address else IPv4Address
        if types is None or family in types:
            receiver.addressResolved(family(kind, address, port))
    receiver.resolutionComplete()


def installed_resolver() -> object:
    """The running reactor's name resolver (a ``CrawlResolver`` unless
    TWISTED_DNS_RESOLVER names another)."""
    from twisted.internet import reactor  # noqa: PLC0415 (the installed one)

    return getattr(reactor, "nameResolver", None)


async def addresses_of(host: str) -> tuple[str, ...]:
    """*host*'s addresses as this process' fetches get them: from the reactor's
    ``CrawlResolver`` (cached, shared), else from the system's resolver; none if
    it has none."""
    resolver = installed_resolver()
    if isinstance(resolver, CrawlResolver):
        return await resolver.addresses(host)
    try:
        found = await asyncio.get_running_loop().getaddrinfo(
            host, None, type=socket.SOCK_STREAM
        )
    except OSError:
        return ()
    return tuple(dict.fromkeys(str(info[4][0]) for info in found))
