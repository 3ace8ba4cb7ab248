"""``scrapy frontier status``: the state of a crawl (``crawler.crawlstate.status``)
and of its URL library (``crawler.revisit.duestatus``) rendered as text for a
terminal."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from crawler.policy.progress import clock, duration, eta_text, fraction_done
from crawler.reports.hosts import cell
from crawler.revisit.duestatus import OVERDUE_GRACE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from crawler.crawlstate.controls import Control
    from crawler.crawlstate.nodetable import NodeStatus
    from crawler.crawlstate.status import CrawlStatus
    from crawler.revisit.duestatus import DueStatus

# Longest text a node id shows, and a run-time setting's value; longer (hostile)
# values are cut.
CELL_WIDTH = 48
VALUE_WIDTH = 200
# What a cell shows for a field the node's entry does not hold (an older node).
ABSENT = "-"
# --- rendering ----------------------------------------------------------------------


def render_status(status: CrawlStatus, *, now: float) -> str:
    """The report, as lines of text."""
    if not status.exists:
        return f"Crawl {status.prefix!r}: no such crawl (no key {status.prefix}:meta)\n"
    lines = [f"Crawl {status.prefix!r}: {status.state}, {status.shards} shards"]
    if status.state == "finished" and status.alive:
        nodes = "1 node" if status.alive == 1 else f"{status.alive} nodes"
        lines[0] += f" ({nodes} alive, idle: taking seeds pushed to {status.prefix}"
        lines[0] += ":seeds)"
    lines.append(progress_line(status, now=now))
    lines += _node_lines(status, now=now)
    lines.append(
        f"Queued {status.queued}, in flight {status.in_flight}; hosts ready "
        f"{status.ready}, waiting {status.waiting}; seeds not yet taken {status.seeds}"
    )
    lines.append(totals_line(status))
    if status.by_depth:
        rows = [[str(d), str(n)] for d, n in sorted(status.by_depth.items())]
        lines += table(["depth", "queued+in flight"], rows)
    if status.work_left:  # a finished crawl needs no owners
        orphans = shard_ranges(status.orphans) if status.orphans else "none"
        lines.append(f"Shards without a live owner: {orphans}")
    settings = status.control.settings
    shown = ", ".join(
        f"{name}={cell(value, VALUE_WIDTH)}" for name, value in settings.items()
    )
    lines.append(f"Run-time settings: {shown or 'none'}")
    if status.control.ignored:
        names = ", ".join(cell(name, CELL_WIDTH) for name in status.control.ignored)
        lines.append(f"Control fields ignored (not this crawler's): {names}")
    return "".join(line + "\n" for line in lines)


def crawl_rate(status: CrawlStatus) -> float:
    """Pages/min of the crawl: its live nodes' rates summed (the one rate status
    and the dashboard show)."""
    return sum(rate for node in status.nodes if node.alive and (rate := node.rate()))


def progress_line(status: CrawlStatus, *, now: float) -> str:
    """``Progress: 63% of the 190 URLs known (done + queued + held + in flight);
    elapsed 12m30s; 84 pages/min; time to drain what is queued now: ~35s``."""
    totals = status.totals()
    left = totals.queued + totals.held + totals.in_flight
    share = fraction_done(totals.done, left)
    elapsed = "?" if status.started is None else duration(now - status.started)
    rate = crawl_rate(status)
    eta = drain_estimate(status, now=now)
    return (
        f"Progress: {share:.0%} of the {totals.done + left} URLs known (done + "
        f"queued + held + in flight); elapsed {elapsed}; {rate:.0f} pages/min; "
        f"time to drain what is queued now: {eta}" + _next_held(status)
    )


def drain_estimate(status: CrawlStatus, *, now: float) -> str:
    """The time to drain what is queued, held and in flight now at the crawl's
    rate, never before the next held URL is due; ``no node alive`` when none is."""
    if not status.alive:
        return "no node alive"
    totals = status.totals()
    left = totals.queued + totals.held + totals.in_flight
    due = status.next_held if status.held else None
    wait = 0.0 if due is None else due - now
    return eta_text(left, crawl_rate(status), growing=False, held_wait=wait)


def totals_line(status: CrawlStatus) -> str:
    """``Done 12: fetched 9, redirected 1; failed 2 (http_error 1, timed_out 1);
    held 3``: URLs whose lease was acknowledged, by fate, and those held (a crawl
    whose nodes kept no fate counters says so)."""
    totals = status.totals()
    if not totals.by_fate:  # written by an earlier version
        return f"Done {totals.done} (not counted by fate); held {totals.held}"
    why = ", ".join(f"{fate} {count}" for fate, count in totals.failed_by_fate.items())
    return (
        f"Done {totals.done}: fetched {totals.fetched}, redirected "
        f"{totals.redirected}; failed {totals.failed}"
        + (f" ({why})" if why else "")
        + f"; held {totals.held}"
    )


def _next_held(status: CrawlStatus) -> str:
    """``; next held URL due 2026-11-24 19:30:00 UTC`` when one waits for its time."""
    due = status.next_held
    return f"; next held URL due {clock(due)}" if status.held and due else ""


def _node_lines(status: CrawlStatus, *, now: float) -> list[str]:
    alive = sum(node.alive for node in status.nodes)
    lines = [f"Nodes: {alive} alive, {len(status.nodes) - alive} dead"]
    if not status.nodes:
        return lines
    rows = [
        [
            cell(node.node_id, CELL_WIDTH),
            "alive" if node.alive else "dead",
            age(now - node.heartbeat) if node.heartbeat is not None else "?",
            shard_ranges(node.shards) or "-",
            str(node.pages) if node.pages is not None else "?",
            f"{rate:.1f}" if (rate := node.rate()) is not None else "?",
            weight_text(node),
            load_text(node),
            state_text(node, status.control),
        ]
        for node in status.nodes
    ]
    headers = ["node", "state", "heartbeat", "shards", "pages", "pages/min"]
    headers += ["weight", "load", "doing"]
    lines += table(headers, rows, left=3)
    lines.append(
        "(pages/min: over the node's last heartbeat interval, else since it "
        "started; weight: its dispatch weight and where it comes from; load: (in "
        "flight + ready hosts) / concurrency; doing: draining, saturated, idle or "
        "working, as the node says; `scrapy frontier nodes` shows more)"
    )
    for node in status.nodes:
        if node.alive and (why := status.idle_reason(node.shards, now=now)):
            lines.append(f"Node {cell(node.node_id, CELL_WIDTH)} is idle: {why}")
    stray = [s for node in status.nodes for s in node.shards if s >= status.shards]
    if stray:
        lines.append(
            f"Nodes own shards up to {max(stray)}, beyond FRONTIER_SHARDS="
            f"{status.shards}: pass the crawl's -s FRONTIER_SHARDS"
        )
    return lines


def weight_text(node: NodeStatus) -> str:
    """``2.00 (measured)``; ``-`` for a node that does not say."""
    if node.weight is None:
        return ABSENT
    source = f" ({cell(node.weight_from, 12)})" if node.weight_from else ""
    return f"{node.weight:.2f}{source}"


def load_text(node: NodeStatus) -> str:
    """``0.75``; ``-`` for a node that does not say."""
    return number_text(node.load, "{:.2f}")


def state_text(node: NodeStatus, control: Control) -> str:
    """What the node says it does (``draining``, ``saturated``, ``idle``,
    ``working``); ``drain asked`` once told to drain and before it says so."""
    asked = node.node_id in control.draining
    if asked and node.state != "draining":
        return "drain asked"
    return ABSENT if node.state is None else cell(node.state, 16)


def number_text(value: float | None, form: str = "{}") -> str:
    """*value* in *form*; ``-`` for None (a field an older node does not write)."""
    return ABSENT if value is None else form.format(value)


def table(headers: list[str], rows: list[list[str]], *, left: int = 0) -> list[str]:
    """Aligned columns: the first *left* columns to the left, the rest to the right."""
    lines = [headers, *rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return [
        "  ".join(
            text.ljust(width) if i < left else text.rjust(width)
            for i, (text, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    ]


def shard_ranges(shards: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 32]`` -> ``"0-3,32"``; ``""`` for none."""
    parts: list[str] = []
    ordered = sorted(set(shards))
    start = 0
    for i, shard in enumerate(ordered):
        if i + 1 == len(ordered) or ordered[i + 1] != shard + 1:
            first = ordered[start]
            parts.append(str(first) if first == shard else f"{first}-{shard}")
            start = i + 1
    return ",".join(parts)


def render_revisits(due: DueStatus, *, where: str) -> str:
    """The Revisits section: the URL library in the database *where* (its URL,
    password hidden), what is due in it and how late, what feeders hold, and
    what comes next."""
    states = ", ".join(f"{state} {count}" for state, count in due.by_state.items())
    lines = [f"Revisits (URL library in {where}): {due.library} URLs ({states})"]
    late = ""
    if due.median_lateness is not None and due.max_lateness is not None:
        late = (
            f"; lateness median {duration(due.median_lateness)}, "
            f"max {duration(due.max_lateness)}"
        )
    lines.append(
        f"Due now {due.due}, overdue {due.overdue} "
        f"(due for more than {duration(OVERDUE_GRACE)}){late}"
    )
    lines.append(
        f"Claimed by feeders {due.claimed}; revisited in the last hour "
        f"{due.recent_revisits}"
    )
    lines.append(f"Next due: {_next_due(due)}")
    return "".join(line + "\n" for line in lines)


def _next_due(due: DueStatus) -> str:
    """``in 4m10s (2026-11-24 19:30:00 UTC)``, or ``none`` when no active URL
    waits for a later visit."""
    if due.next_due is None:
        return "none"
    when = datetime.fromtimestamp(due.next_due, UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"in {duration(due.next_due - due.now)} ({when} UTC)"


def age(seconds: float) -> str:
    """``4`` -> ``4s ago``, ``125`` -> ``2m05s ago``, ``3700`` -> ``1h01m ago``."""
    return f"{duration(seconds)} ago"
