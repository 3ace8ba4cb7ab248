"""Simulated crawl orders on simulated webs: which importance estimate fetches the
most PageRank first, under the frontier's politeness (no network).

``python -m bench.importancesim [--shapes a,b] [--orders x,y] [--budget 0.5]``

The model is the Redis frontier's: each host's queue gives its highest-keyed URL
first; among the hosts that may be fetched now (delay over since their last fetch
ended, no request in flight) the one whose best URL keys highest (plus its host
term) goes next, up to a concurrency of requests in flight. A fetch takes a
latency drawn from a range; its links are queued (new) or credited (still queued)
when it ends. The orders themselves are in ``bench.importanceorders``. Reports
the share of the web's total PageRank fetched after 5, 10, 20 and 50% of its
pages, and the gap each order closes between ``bfs`` and ``omni``.
"""

from __future__ import annotations

import argparse
import heapq
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench import importanceorders, simweb

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bench.importanceorders import Order

POINTS = (0.05, 0.10, 0.20, 0.50)
UNKNOWN, QUEUED, TAKEN = 0, 1, 2
EMPTY, WAITING, READY, BUSY = 0, 1, 2, 3


@dataclass(frozen=True)
class Timing:
    """The politeness model: latency range (s), delay between two fetches of a
    host (s, from the end of one to the start of the next), requests in flight."""

    latency: tuple[float, float] = (0.02, 0.1)
    delay: float = 0.5
    concurrency: int = 16
    seed: int = 7
    # Seconds between two requests handed out at most: a crawler bound by its own
    # CPU hands out one request per page it handles, whatever its free slots.
    pace: float = 0.0


@dataclass(frozen=True)
class Run:
    """One crawl: the pages in the order fetched and the simulated seconds."""

    order: str
    fetched: list[int]
    seconds: float


class Crawl:
    """One simulated crawl of *web* in *order*; ``run`` fetches up to *budget*."""

    def __init__(
        self, web: simweb.Web, rank: Sequence[float], order: Order, timing: Timing
    ) -> None:
        self.web, self.rank, self.order, self.timing = web, rank, order, timing
        self.rng = random.Random(timing.seed)
        pages, hosts = len(web.paths), len(web.hosts)
        self.status = bytearray(pages)
        self.depth = [0] * pages
        self.seq = [0] * pages
        self.key = [0.0] * pages
        self.queues: list[list[tuple[float, int, int]]] = [[] for _ in range(hosts)]
        self.state = [EMPTY] * hosts
        self.ready_at = [0.0] * hosts
        self.version = [0] * hosts
        self.pushed: list[tuple[float, int] | None] = [None] * hosts
        self.ready: list[tuple[float, int, int, int]] = []
        self.waiting: list[tuple[float, int]] = []
        self.flights: list[tuple[float, int]] = []
        self.now = 0.0
        self.discovered = 0
        self.next_dispatch = 0.0

    def run(self, budget: int) -> Run:
        order = self.order
        order.start(self.web, self.rank)
        touched: set[int] = set()
        for page in self.web.seeds:
            self._discover(page, 0, touched)
        self._refresh_all(touched)
        fetched: list[int] = []
        while len(fetched) < budget:
            self._dispatch()
            if not self._advance():
                break
            self._release_waiting()
            while (
                self.flights
                and self.flights[0][0] <= self.now
                and len(fetched) < budget
            ):
                _, page = heapq.heappop(self.flights)
                fetched.append(page)
                self._complete(page)
        return Run(order.name, fetched, self.now)

    def _discover(self, page: int, depth: int, touched: set[int]) -> None:
        self.status[page] = QUEUED
        self.depth[page] = depth
        self.seq[page] = self.discovered
        self.discovered += 1
        self.order.discover(page, depth, self.seq[page])
        self._requeue(page, touched)

    def _requeue(self, page: int, touched: set[int]) -> None:
        key = self.order.key(page)
        self.key[page] = key
        host = self.web.host_of[page]
        heapq.heappush(self.queues[host], (-key, self.seq[page], page))
        touched.add(host)

    def _best(self, host: int) -> tuple[float, int, int] | None:
        """The host's best queued URL (stale heap entries dropped on the way)."""
        queue = self.queues[host]
        while queue:
            negkey, _, page = queue[0]
            if self.status[page] == QUEUED and self.key[page] == -negkey:
                return queue[0]
            heapq.heappop(queue)
        return None

    def _refresh(self, host: int) -> None:
        """Put *host* where it belongs: empty, waiting for its delay, or ready
        (with its best URL's key plus its host term in the ready heap)."""
        if self.state[host] == BUSY:
            return
        best = self._best(host)
        if best is None:
            self.state[host] = EMPTY
            return
        if self.ready_at[host] > self.now:
            if self.state[host] != WAITING:
                self.state[host] = WAITING
                heapq.heappush(self.waiting, (self.ready_at[host], host))
            return
        value = (self.order.host_value(host, -best[0]), best[1])
        if self.state[host] == READY and self.pushed[host] == value:
            return
        self.state[host] = READY
        self.version[host] += 1
        self.pushed[host] = value
        heapq.heappush(self.ready, (-value[0], value[1], host, self.version[host]))

    def _refresh_all(self, hosts: set[int]) -> None:
        for host in hosts:
            self._refresh(host)

    def _dispatch(self) -> None:
        """Start fetches while a slot is free and a host is ready."""
        low, high = self.timing.latency
        pace = self.timing.pace
        while len(self.flights) < self.timing.concurrency and self.ready:
            if pace and self.now < self.next_dispatch:
                return
            _, _, host, version = heapq.heappop(self.ready)
            if version != self.version[host] or self.state[host] != READY:
                continue
            best = self._best(host)
            if best is None:
                self.state[host] = EMPTY
                continue
            heapq.heappop(self.queues[host])
            page = best[2]
            self.status[page] = TAKEN
            self.order.popped(page)
            self.state[host] = BUSY
            self.version[host] += 1
            done = self.now + self.rng.uniform(low, high)
            heapq.heappush(self.flights, (done, page))
            self.next_dispatch = self.now + pace

    def _advance(self) -> bool:
        """Move the clock to the next event; False when nothing is left to do."""
        times = []
        free = len(self.flights) < self.timing.concurrency
        if free and self.ready and self.next_dispatch > self.now:
            times.append(self.next_dispatch)
        if self.flights:
            times.append(self.flights[0][0])
        if len(self.flights) < self.timing.concurrency and self.waiting:
            times.append(self.waiting[0][0])
        if not times:
            return False
        self.now = max(self.now, min(times))
        return True

    def _release_waiting(self) -> None:
        while self.waiting and self.waiting[0][0] <= self.now:
            _, host = heapq.heappop(self.waiting)
            if self.state[host] == WAITING and self.ready_at[host] <= self.now:
                self.state[host] = EMPTY
                self._refresh(host)

    def _complete(self, page: int) -> None:
        """A fetch ended: its host waits its delay; its links are queued or
        credited (links to pages taken already are the order's to ignore)."""
        host = self.web.host_of[page]
        self.state[host] = EMPTY
        self.ready_at[host] = self.now + self.timing.delay
        touched = {host}
        targets = self.web.links[page]
        for target in targets:
            if self.status[target] == UNKNOWN:
                self._discover(target, self.depth[page] + 1, touched)
        changed_pages, changed_hosts = self.order.fetched(page, targets, self.status)
        for target in changed_pages:
            if self.status[target] == QUEUED:
                self._requeue(target, touched)
        touched.update(changed_hosts)
        self._refresh_all(touched)


@dataclass(frozen=True)
class Curve:
    """PageRank shares fetched at each of ``POINTS`` (shares of the web's pages)."""

    order: str
    shares: tuple[float, ...]
    seconds: float  # simulated, to the last point


def curve(run: Run, rank: Sequence[float]) -> Curve:
    total = len(rank)
    shares, captured, marks = [], 0.0, [round(p * total) for p in POINTS]
    for index, page in enumerate(run.fetched, start=1):
        captured += rank[page]
        if index in marks:
            shares.append(captured)
    shares += [captured] * (len(POINTS) - len(shares))
    return Curve(run.order, tuple(shares), run.seconds)


def closure(value: float, bfs: float, omni: float) -> float:
    """The share of the gap between bfs and omniscient that *value* closes."""
    return (value - bfs) / (omni - bfs) if omni != bfs else 0.0


def evaluate(
    web: simweb.Web, rank: Sequence[float], orders: Sequence[Order], timing: Timing
) -> list[Curve]:
    budget = round(max(POINTS) * len(web.paths))
    return [
        curve(Crawl(web, rank, order, timing).run(budget), rank) for order in orders
    ]


def table(shape: str, curves: Sequence[Curve]) -> str:
    by_name = {c.order: c for c in curves}
    bfs, omni = by_name.get("bfs"), by_name.get("omni")
    lines = [
        f"### {shape}",
        "",
        "| order | 5% | 10% | 20% | 50% | gap 5% | gap 10% | sim s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in curves:
        gaps = ["", ""]
        if bfs and omni:
            gaps = [
                f"{closure(c.shares[i], bfs.shares[i], omni.shares[i]):.2f}"
                for i in (0, 1)
            ]
        cells = " | ".join(f"{s:.3f}" for s in c.shares)
        lines.append(f"| {c.order} | {cells} | {' | '.join(gaps)} | {c.seconds:.0f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default=",".join(s.name for s in simweb.SHAPES))
    parser.add_argument("--orders", default=",".join(importanceorders.DEFAULT))
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument(
        "--pace", type=float, default=0.0, help="s between two requests, at least"
    )
    args = parser.parse_args(argv)
    shapes = {s.name: s for s in simweb.SHAPES}
    timing = Timing(delay=args.delay, concurrency=args.concurrency, pace=args.pace)
    for name in args.shapes.split(","):
        started = time.monotonic()
        web = simweb.build(shapes[name])
        rank = simweb.pagerank(web.links)
        orders = [importanceorders.named(o) for o in args.orders.split(",")]
        curves = evaluate(web, rank, orders, timing)
        print(table(f"{name}: {len(web.paths)} pages, {len(web.hosts)} hosts", curves))
        print(f"({time.monotonic() - started:.1f} s)\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
