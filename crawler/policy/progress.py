"""What a person reads of a crawl's progress: the rate, the estimate of the time
to drain what is queued now, how far it got, and why a node does nothing.

Pure: every figure and the time are arguments. The progress log line
(``crawler.frontier.node.progress``), ``scrapy frontier status`` and the dashboard
all word these the same way, so the three never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime


def duration(seconds: float) -> str:
    """``4`` -> ``4s``, ``125`` -> ``2m05s``, ``3700`` -> ``1h01m``, ``90000`` ->
    ``1d01h`` (rounded to the second; below 0 is 0)."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def clock(when: float) -> str:
    """``2026-11-24 19:30:00 UTC``: a moment as people read it in a log."""
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def per_minute(count: int, seconds: float) -> float:
    """*count* pages over *seconds* as pages/min; 0 over no time (nothing to say)."""
    return count * 60 / seconds if seconds > 0 else 0.0


def eta_seconds(
    left: int, pages_per_min: float, *, growing: bool, held_wait: float = 0.0
) -> float | None:
    """Seconds to drain the *left* requests at *pages_per_min*, and never less than
    *held_wait* (seconds until the next held request may be tried); None when the
    rate says nothing about it: no pages done, or the queue grew meanwhile (a
    breadth-first crawl discovers pages faster than it fetches them, early on)."""
    if left <= 0:
        return 0.0
    if pages_per_min <= 0 or growing:
        return None
    return max(left * 60 / pages_per_min, held_wait)


def eta_text(
    left: int, pages_per_min: float, *, growing: bool, held_wait: float = 0.0
) -> str:
    """The estimate as the log line, status and the dashboard word it."""
    seconds = eta_seconds(left, pages_per_min, growing=growing, held_wait=held_wait)
    if seconds is not None:
        return f"~{duration(seconds)}" if left else "nothing queued"
    return "unknown (queue growing)" if growing else "unknown (no pages done lately)"


def fraction_done(done: int, left: int) -> float:
    """``done / (done + left)``: the share of the work known now that is done (1.0
    for a crawl with nothing known yet: no bar to fill)."""
    known = done + left
    return done / known if known > 0 else 1.0


@dataclass(frozen=True, slots=True)
class NodeWork:
    """What the shards one node owns hold: hosts with requests (*ready* now,
    *waiting* out their delay), requests in flight and held, and when (epoch
    seconds) the next waiting host is ready and the next held request is due."""

    shards: int = 0
    ready: int = 0
    waiting: int = 0
    in_flight: int = 0
    held: int = 0
    next_ready: float | None = None
    next_held: float | None = None


@dataclass(frozen=True, slots=True)
class CrawlWork:
    """What the whole crawl holds, for the idle reason: hosts with requests (ready
    or waiting), requests held, whether anything is left at all, and paused."""

    hosts: int
    held: int
    work_left: bool
    paused: bool


def idle_reason(node: NodeWork, crawl: CrawlWork, *, now: float) -> str | None:
    """Why a node fetches nothing now, or None when it has work in hand or ready.

    In order: the crawl is paused; nothing is left anywhere; the node owns no
    shard (or none with work: its hosts are in other nodes' shards); its hosts
    wait out their politeness delay; its requests are held for a later try."""
    if node.in_flight or node.ready:
        return None
    if crawl.paused:
        return "paused (scrapy frontier resume)"
    if not crawl.work_left:
        return "nothing left to do"
    if not (node.waiting or node.held):
        return _owns_nothing(node, crawl)
    if node.waiting:
        wait = (
            "" if node.next_ready is None else f" in {duration(node.next_ready - now)}"
        )
        return f"waiting on host delays: next host ready{wait}"
    due = "" if node.next_held is None else f" at {_due(node.next_held, now)}"
    return f"waiting on held URLs: next retry{due}"


def _owns_nothing(node: NodeWork, crawl: CrawlWork) -> str:
    """The node's shards hold no work: say whose do."""
    if not node.shards:
        return "owns no shard (other nodes hold them all)"
    if crawl.hosts or crawl.held:
        hosts = crawl.hosts
        return (
            f"owns 0 of {hosts} hosts with work: all are in shards of other nodes"
            if hosts
            else "its shards hold no work: the held URLs are in other nodes' shards"
        )
    return "its shards hold no work; the rest is in flight on other nodes"


def _due(when: float, now: float) -> str:
    """``19:30:00 UTC, in 4m10s``."""
    return f"{clock(when)[11:]}, in {duration(when - now)}"


@dataclass(frozen=True, slots=True)
class Figures:
    """One progress report: requests done (acknowledged, whatever their fate) and
    failed for good, queued, held (and when the next is due), in flight; pages/min
    of the crawl and of this node; seconds since the crawl started (None: not
    known); whether what is left grew meanwhile; why this node is idle (None: it
    is not)."""

    done: int
    failed: int
    queued: int
    held: int
    in_flight: int
    next_held: float | None
    crawl_rate: float
    node_rate: float
    elapsed: float | None
    growing: bool
    idle: str | None

    @property
    def left(self) -> int:
        """Requests still to do: queued, held and in flight."""
        return self.queued + self.held + self.in_flight


def progress_line(figures: Figures, *, now: float) -> str:
    """The periodic log line: ``Progress: done 120 (3 failed for good), queued 49,
    held 4 (next due ...), in flight 2; 84 pages/min in the crawl, 40 on this node;
    elapsed 12m30s; time to drain what is queued now: ~35s`` and, when this node
    fetches nothing, ``; this node idle: <why>``."""
    held = f"held {figures.held}"
    if figures.held and figures.next_held is not None:
        held += f" (next due at {_due(figures.next_held, now)})"
    elapsed = "?" if figures.elapsed is None else duration(figures.elapsed)
    wait = 0.0 if figures.next_held is None else figures.next_held - now
    eta = eta_text(
        figures.left, figures.crawl_rate, growing=figures.growing, held_wait=wait
    )
    line = (
        f"Progress: done {figures.done} ({figures.failed} failed for good), "
        f"queued {figures.queued}, {held}, in flight {figures.in_flight}; "
        f"{figures.crawl_rate:.0f} pages/min in the crawl, "
        f"{figures.node_rate:.0f} on this node; elapsed {elapsed}; "
        f"time to drain what is queued now: {eta}"
    )
    return line if figures.idle is None else f"{line}; this node idle: {figures.idle}"
