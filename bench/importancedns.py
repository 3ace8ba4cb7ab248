"""The importance benchmark's name resolver: its hosts' names, and nothing else.

``TWISTED_DNS_RESOLVER = "bench.importancedns.TableResolver"`` with the setting
``BENCH_HOSTS_FILE`` naming a JSON object {host name: loopback address}
(``bench.simweb.Web.addresses``). A name not in the table, or an address outside
127.0.0.0/8, fails to resolve: the crawl can reach no other machine, whatever
links it meets.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import TYPE_CHECKING

from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer  # type: ignore[import-untyped]

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    from scrapy.crawler import Crawler
    from twisted.internet.base import ReactorBase


@implementer(IResolverSimple)
class TableResolver:
    """Answers the names of one table, each with its loopback address."""

    def __init__(self, reactor: ReactorBase, table: dict[str, str]) -> None:
        for name, address in table.items():
            if not ipaddress.ip_address(address).is_loopback:
                raise ValueError(f"{name} -> {address}: not a loopback address")
        self.reactor = reactor
        self.table = {name.lower(): address for name, address in table.items()}

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> Self:
        path = crawler.settings.get("BENCH_HOSTS_FILE")
        if not path:
            raise ValueError("BENCH_HOSTS_FILE: the hosts table file is needed")
        return cls(reactor, json.loads(Path(path).read_text()))

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)  # type: ignore[arg-type]

    def getHostByName(
        self, name: str, timeout: Sequence[int] = ()
    ) -> defer.Deferred[str]:
        address = self.table.get(name.lower())
        if address is None:
            with_literal = _loopback_literal(name)
            if with_literal is None:
                return defer.fail(DNSLookupError(f"{name}: not a benchmark host"))
            address = with_literal
        return defer.succeed(address)


def _loopback_literal(name: str) -> str | None:
    """*name* itself when it is a loopback IP address."""
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return None
    return name if address.is_loopback else None
