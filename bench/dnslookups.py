"""Which DNS client the crawl's resolver uses: Twisted's or dnspython's, timed.

``python -m bench.dnslookups [--lookups N] [--parallel P]`` starts the tests' DNS
server (tests/dnsserver.py) on a loopback port and times N lookups of distinct
names with each client on the asyncio reactor, P at a time: the median and p99
of one lookup and the lookups a second. The figures are in docs/politeness.md#dns.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable


async def _timed(
    ask: Callable[[str], Awaitable[object]], names: list[str], parallel: int
) -> tuple[list[float], float]:
    slots = asyncio.Semaphore(parallel)
    times: list[float] = []

    async def one(name: str) -> None:
        async with slots:
            started = time.perf_counter()
            await ask(name)
            times.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(one(name) for name in names))
    return times, time.perf_counter() - started


def _twisted(port: int) -> Callable[[str], Awaitable[object]]:
    from scrapy.utils.defer import maybe_deferred_to_future  # noqa: PLC0415
    from twisted.names import client  # noqa: PLC0415

    resolver = client.Resolver(servers=[("127.0.0.1", port)])
    return lambda name: maybe_deferred_to_future(
        resolver.lookupAddress(name, timeout=(1, 3))
    )


def _dnspython(port: int) -> Callable[[str], Awaitable[object]]:
    import dns.asyncresolver  # noqa: PLC0415

    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers = ["127.0.0.1"]
    resolver.port = port
    return lambda name: resolver.resolve(name, "A", lifetime=4)


async def _run(lookups: int, parallel: int) -> None:
    from tests.dnsserver import running_dns  # noqa: PLC0415

    zone = {f"h{i}.crawl.test": "127.0.0.2" for i in range(2 * lookups)}
    with running_dns(zone, ttl=60) as dns:
        for label, make, first in (
            ("twisted.names", _twisted, 0),
            ("dnspython", _dnspython, lookups),
        ):
            names = [f"h{i}.crawl.test" for i in range(first, first + lookups)]
            times, total = await _timed(make(dns.port), names, parallel)
            cut = statistics.quantiles(times, n=100)
            print(
                f"{label:14} median {statistics.median(times) * 1000:.2f} ms  "
                f"p99 {cut[98] * 1000:.2f} ms  {lookups / total:.0f} lookups/s"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lookups", type=int, default=300)
    parser.add_argument("--parallel", type=int, default=1)
    args = parser.parse_args()
    from twisted.internet import asyncioreactor  # noqa: PLC0415

    asyncioreactor.install()
    from twisted.internet import defer, reactor  # noqa: PLC0415

    done = defer.Deferred.fromFuture(
        asyncio.ensure_future(_run(args.lookups, args.parallel))
    )
    done.addErrback(lambda failure: print(failure.getTraceback()))
    done.addBoth(lambda _: reactor.stop())  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
