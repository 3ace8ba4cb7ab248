"""What ``bench.dispatch`` reads off a crawl: from the site's request log (at the
server) and from samples of the node table. Pure: rows and samples in, figures out.

The site logs each request with the time it arrived (``t``) and answers it
``latency`` seconds later, so a node's requests in flight at time x are its rows with
``t <= x < t + latency``. A host *waits* from the end of one fetch plus its delay
(and a little slack) until its next fetch starts; it waits on the node that fetched
it last (its owner then). A node is *idle* while it has fewer requests in flight
than its concurrency and no host of its own waits (free capacity, nothing to
do). Idle-while-waiting is the node-time a node was idle while another node had
more hosts waiting than free slots: work that free capacity elsewhere could have
taken. One caveat: the log cannot tell a host whose
next page is not yet discovered from one whose page waits; the crawls seed every
host's root and link pages densely, so nearly all pages are known early on.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Any

GRID = 0.1  # seconds between the instants idle-while-waiting is evaluated at
SLACK = 0.05  # a host counts as waiting only this long after its delay is over


@dataclass(frozen=True)
class Timing:
    """The site's latency and the hosts' politeness delay of a crawl."""

    latency: float
    delay: float


def pages_of(rows: list[dict[str, Any]], labels: set[str]) -> list[dict[str, Any]]:
    """The page fetches of the nodes named *labels* (robots.txt left out)."""
    return [r for r in rows if r["path"] != "/robots.txt" and r["node"] in labels]


def fetch_counts(pages: list[dict[str, Any]], total: int) -> dict[str, Any]:
    """Pages fetched, distinct, fetched twice or more, and lost (never fetched)."""
    unique = len({(r["host"], r["path"]) for r in pages})
    return {
        "pages": len(pages),
        "distinct": unique,
        "fetched_twice": len(pages) - unique,
        "lost": total - unique,
        "seconds": pages[-1]["t"] - pages[0]["t"] if len(pages) > 1 else 0.0,
    }


def twice_first(pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first fetch of each page fetched more than once."""
    first: dict[tuple[str, str], dict[str, Any]] = {}
    again: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sorted(pages, key=lambda r: r["t"]):
        page = (row["host"], row["path"])
        if page in first:
            again[page] = first[page]
        else:
            first[page] = row
    return list(again.values())


def twice_first_by(pages: list[dict[str, Any]]) -> dict[str, int]:
    """Pages fetched more than once, by the node that fetched them first."""
    counts: dict[str, int] = {}
    for row in twice_first(pages):
        counts[row["node"]] = counts.get(row["node"], 0) + 1
    return dict(sorted(counts.items()))


def by_node(pages: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in pages:
        counts[row["node"]] = counts.get(row["node"], 0) + 1
    return dict(sorted(counts.items()))


def gaps(pages: list[dict[str, Any]], timing: Timing) -> dict[str, float | None]:
    """The smallest per-host gap: from one request's arrival to the next's, and
    from one answer (arrival + latency) to the next arrival (what the delay
    governs: it counts from the end of the previous download)."""
    last: dict[str, float] = {}
    arrival: float | None = None
    for row in sorted(pages, key=lambda r: r["t"]):
        before = last.get(row["host"])
        if before is not None:
            gap = row["t"] - before
            arrival = gap if arrival is None else min(arrival, gap)
        last[row["host"]] = row["t"]
    return {
        "min_arrival_gap": arrival,
        "min_end_to_start_gap": None if arrival is None else arrival - timing.latency,
    }


def tail(pages: list[dict[str, Any]], share: float) -> float | None:
    """Seconds from the first page until *share* of the pages were fetched."""
    if len(pages) < 2:
        return None
    return float(pages[int(share * (len(pages) - 1))]["t"] - pages[0]["t"])


def rate(pages: list[dict[str, Any]], skip: float) -> float:
    """Pages a second of *pages* after their first *skip* seconds (start-up)."""
    if not pages:
        return 0.0
    start = pages[0]["t"] + skip
    times: list[float] = [r["t"] for r in pages if r["t"] >= start]
    if len(times) < 2 or times[-1] <= times[0]:
        return 0.0
    return (len(times) - 1) / (times[-1] - times[0])


@dataclass(frozen=True)
class Intervals:
    """Sorted starts and ends of intervals: how many are open at an instant."""

    starts: list[float]
    ends: list[float]

    @classmethod
    def of(cls, pairs: list[tuple[float, float]]) -> Intervals:
        return cls(sorted(a for a, _ in pairs), sorted(b for _, b in pairs))

    def open_at(self, x: float) -> int:
        return bisect.bisect_right(self.starts, x) - bisect.bisect_right(self.ends, x)


def idle_while_waiting(
    pages: list[dict[str, Any]], concurrency: dict[str, int], timing: Timing
) -> dict[str, Any]:
    """Share of node-time idle (free slots, no host of its own waiting) while
    another node had more hosts waiting than free slots (``NodeLoad``'s idle and
    saturated, read at the site), over the crawl from its first to its last page."""
    if len(pages) < 2:
        return {"idle_while_waiting": None}
    flight = {
        node: Intervals.of(
            [(r["t"], r["t"] + timing.latency) for r in pages if r["node"] == node]
        )
        for node in concurrency
    }
    waiting = _waiting(pages, list(concurrency), timing)
    start, end = pages[0]["t"], pages[-1]["t"]
    steps = int((end - start) / GRID)
    idle_time = dict.fromkeys(concurrency, 0)
    wasted = dict.fromkeys(concurrency, 0)
    for step in range(steps):
        x = start + step * GRID
        free = {n: max(0, c - flight[n].open_at(x)) for n, c in concurrency.items()}
        ready = {n: waiting[n].open_at(x) for n in concurrency}
        blocked = {n for n in concurrency if ready[n] > free[n]}
        for node in concurrency:
            if free[node] and not ready[node]:
                idle_time[node] += 1
                wasted[node] += bool(blocked - {node})
    total = steps * len(concurrency)
    return {
        "idle_while_waiting": sum(wasted.values()) / total if total else None,
        "idle": sum(idle_time.values()) / total if total else None,
        "idle_while_waiting_by_node": {
            n: round(w / steps, 3) if steps else None for n, w in wasted.items()
        },
    }


def _waiting(
    pages: list[dict[str, Any]], nodes: list[str], timing: Timing
) -> dict[str, Intervals]:
    """Per node, the intervals its hosts waited (ready, not fetched)."""
    per_host: dict[str, list[dict[str, Any]]] = {}
    for row in pages:
        per_host.setdefault(row["host"], []).append(row)
    pairs: dict[str, list[tuple[float, float]]] = {node: [] for node in nodes}
    for fetches in per_host.values():
        fetches.sort(key=lambda r: r["t"])
        for before, after in itertools.pairwise(fetches):
            ready = before["t"] + timing.latency + timing.delay + SLACK
            if after["t"] > ready and before["node"] in pairs:
                pairs[before["node"]].append((ready, after["t"]))
    return {node: Intervals.of(p) for node, p in pairs.items()}


def in_flight_at(
    pages: list[dict[str, Any]], node: str, x: float, latency: float
) -> int:
    """Requests of *node* the site was answering at *x* (those a kill may repeat)."""
    return sum(1 for r in pages if r["node"] == node and r["t"] <= x < r["t"] + latency)


Sample = tuple[float, dict[str, dict[str, Any]]]


def owners(entries: dict[str, dict[str, Any]]) -> dict[int, str]:
    """Shard -> node, as one sample of the node table says; a shard two entries
    list (one node's heartbeat not yet past a handover) is left out."""
    listed: dict[int, list[str]] = {}
    for node, entry in entries.items():
        for shard in entry.get("shards") or []:
            listed.setdefault(shard, []).append(node)
    return {shard: nodes[0] for shard, nodes in listed.items() if len(nodes) == 1}


def moves(samples: list[Sample], after: float = 0.0) -> int:
    """Shards that changed owner between successive samples taken after *after*
    (a shard's first owner is no move; nor is a shard without owner for a while)."""
    known: dict[int, str] = {}
    moved = 0
    for t, entries in samples:
        for shard, node in owners(entries).items():
            if shard in known and known[shard] != node and t >= after:
                moved += 1
            known[shard] = node
    return moved


def table_load(samples: list[Sample]) -> dict[str, Any]:
    """Idle-while-waiting as the node table says it, if its entries carry load
    (``in_flight``, ``concurrency``, ``ready_hosts``); and each node's last
    ``capacity``, ``weight`` and ``shards_in``/``shards_out``."""
    rows = [entries for _, entries in samples if entries]
    if not rows or not all("ready_hosts" in e for e in rows[-1].values()):
        return {"table_idle_while_waiting": None}
    wasted = counted = 0
    for entries in rows:
        idle = {n for n, e in entries.items() if _idle(e)}
        blocked = {n for n, e in entries.items() if _saturated_waiting(e)}
        counted += len(entries)
        wasted += sum(1 for n in idle if blocked - {n})
    last: dict[str, dict[str, Any]] = {}
    for entries in rows:
        last.update(entries)
    keep = ("capacity", "weight", "weight_from", "shards_in", "shards_out", "dispatch")
    return {
        "table_idle_while_waiting": wasted / counted if counted else None,
        "table_last": {n: {k: e.get(k) for k in keep} for n, e in sorted(last.items())},
    }


def _idle(entry: dict[str, Any]) -> bool:
    """Free slots and no ready host in its shards (``NodeLoad.idle``)."""
    free = entry.get("concurrency", 0) - entry.get("in_flight", 0)
    return bool(free > 0 and not entry.get("ready_hosts"))


def _saturated_waiting(entry: dict[str, Any]) -> bool:
    """More ready hosts than free slots (``NodeLoad.saturated``)."""
    free = max(0, entry.get("concurrency", 0) - entry.get("in_flight", 0))
    return bool(entry.get("ready_hosts", 0) > free)
