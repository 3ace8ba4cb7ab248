"""The state of a crawl as ``scrapy frontier status`` shows it: read, then rendered.

Reading takes two pipelined round trips of single-key commands (so it works on a
Redis Cluster): the crawl's meta hash, the registry, the control hash, the seeds list
and each shard's counters, then one ``EXISTS`` per node heartbeat. The state is
``no such crawl`` (no meta hash: no node ever opened it), ``paused``, ``running`` (a
node is alive), ``finished`` (nothing queued, in flight, held or seeded, and no node
alive) or ``stopped`` (work left, no node alive: a rerun resumes it). Nothing Redis holds makes it raise:
a value that is not what this crawler writes counts as absent, or shows as ``?``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crawler.frontier.runcontrol import Control, read_control
from crawler.policy.fates import FAILED_FATES, FATES
from crawler.policy.order import TIERS_PER_DEPTH

if TYPE_CHECKING:
    from collections.abc import Sequence

    import redis

    from crawler.crawlstate.keys import CrawlKeys

# Longest text a node id shows, and a run-time setting's value; longer (hostile)
# values are cut.
CELL_WIDTH = 48
VALUE_WIDTH = 200
# Commands per shard in the first pipeline, in the order _add_shard reads them.
_SHARD_COMMANDS = 6
# Commands before the shards' in the first pipeline.
_GLOBAL_COMMANDS = 4
# Fields of a shard's counters hash: one per final fate (``fate:<fate>``, counted
# when a lease is acknowledged with it) and URLs held for a later try (a gauge).
FATE_FIELD = "fate:"
HELD_FIELD = "held"


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """One entry of the node registry; None where the entry did not say."""

    node_id: str
    alive: bool
    heartbeat: float | None = None
    started: float | None = None
    shards: tuple[int, ...] = ()
    pages: int | None = None
    pages_per_min: float | None = None

    def rate(self) -> float | None:
        """Pages a minute: the node's own figure, else its average since start."""
        if self.pages_per_min is not None:
            return self.pages_per_min
        pages, heartbeat, started = self.pages, self.heartbeat, self.started
        if pages is None or heartbeat is None or started is None:
            return None
        minutes = (heartbeat - started) / 60
        return pages / minutes if minutes > 0 else None


@dataclass(slots=True)
class CrawlStatus:
    """Totals over every shard, the nodes, and the controls in force."""

    prefix: str
    shards: int
    nodes: list[NodeStatus] = field(default_factory=list)
    control: Control = field(default_factory=Control)
    seeds: int = 0
    queued: int = 0
    in_flight: int = 0
    ready: int = 0
    waiting: int = 0
    by_depth: dict[int, int] = field(default_factory=dict)
    orphans: list[int] = field(default_factory=list)
    exists: bool = True
    acked: int = 0
    held: int = 0
    fates: dict[str, int] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """``no such crawl``, ``paused``, ``running``, ``finished`` or ``stopped``."""
        if not self.exists:
            return "no such crawl"
        if self.control.paused:
            return "paused"
        if any(node.alive for node in self.nodes):
            return "running"
        if self.queued or self.in_flight or self.held or self.seeds:
            return "stopped"
        return "finished"


def read_status(client: redis.Redis, keys: CrawlKeys, shards: int) -> CrawlStatus:
    """The crawl's state: two round trips."""
    pipe = client.pipeline(transaction=False)
    pipe.exists(keys.meta)
    pipe.hgetall(keys.nodes)
    pipe.hgetall(keys.control)
    pipe.llen(keys.seeds)
    for shard in range(shards):
        shard_keys = keys.shard(shard)
        pipe.hgetall(shard_keys.counters)
        pipe.hgetall(shard_keys.outstanding)
        pipe.zcard(shard_keys.ready)
        pipe.zcard(shard_keys.waiting)
        pipe.zcard(shard_keys.leases)
        pipe.get(shard_keys.owner)
    replies = pipe.execute(raise_on_error=False)
    registry = _mapping(replies[1])
    status = CrawlStatus(
        keys.prefix, shards, control=read_control(_mapping(replies[2]))
    )
    status.exists = replies[0] == 1
    status.seeds = _count(replies[3])
    owners: list[str | None] = []
    for shard in range(shards):
        start = _GLOBAL_COMMANDS + shard * _SHARD_COMMANDS
        owners.append(_add_shard(status, replies[start : start + _SHARD_COMMANDS]))
    entries = {_decoded(node): raw for node, raw in registry.items()}
    alive = _alive(client, keys, {*entries, *(o for o in owners if o is not None)})
    status.nodes = [_node(node, entries[node], alive[node]) for node in sorted(entries)]
    status.orphans = [s for s, o in enumerate(owners) if o is None or not alive[o]]
    return status


def live_nodes(client: redis.Redis, keys: CrawlKeys) -> list[str]:
    """Ids of the registered nodes whose heartbeat key exists: two round trips."""
    registry: dict[bytes, bytes] = client.hgetall(keys.nodes)  # type: ignore[assignment]
    alive = _alive(client, keys, {_decoded(node) for node in registry})
    return sorted(node for node, is_alive in alive.items() if is_alive)


def _add_shard(status: CrawlStatus, replies: Sequence[Any]) -> str | None:
    """Add one shard's counters to *status*; the shard's owner id, if any."""
    counters, outstanding, ready, waiting, leases, owner = replies
    _add_counters(status, _mapping(counters))
    status.ready += _count(ready)
    status.waiting += _count(waiting)
    status.in_flight += _count(leases)
    for level, count in _mapping(outstanding).items():
        if level.isdigit():
            depth = int(level) // TIERS_PER_DEPTH
            status.by_depth[depth] = status.by_depth.get(depth, 0) + _count(count)
    return _decoded(owner) if isinstance(owner, bytes) else None


def _add_counters(status: CrawlStatus, counters: dict[bytes, bytes]) -> None:
    """Add one shard's ``counters`` hash: queued, acked, held and the fates."""
    for raw_name, value in counters.items():
        name = _decoded(raw_name)
        if name == "queued":
            status.queued += _count(value)
        elif name == "acked":
            status.acked += _count(value)
        elif name == HELD_FIELD:
            status.held += _count(value)
        elif name.startswith(FATE_FIELD) and name[len(FATE_FIELD) :] in FATES:
            fate = name[len(FATE_FIELD) :]
            status.fates[fate] = status.fates.get(fate, 0) + _count(value)


def _alive(client: redis.Redis, keys: CrawlKeys, ids: set[str]) -> dict[str, bool]:
    """Whether each node's heartbeat key exists."""
    ordered = sorted(ids)
    pipe = client.pipeline(transaction=False)
    for node in ordered:
        pipe.exists(keys.heartbeat(node))
    replies = pipe.execute(raise_on_error=False) if ordered else []
    return {node: reply == 1 for node, reply in zip(ordered, replies, strict=True)}


def _node(node_id: str, raw: bytes, alive: bool) -> NodeStatus:
    """The registry entry *raw* of *node_id*, read defensively."""
    try:
        entry = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        entry = None
    if not isinstance(entry, dict):
        return NodeStatus(node_id, alive)
    shards = entry.get("shards")
    return NodeStatus(
        node_id,
        alive,
        heartbeat=_number(entry.get("heartbeat")),
        started=_number(entry.get("started")),
        shards=tuple(
            sorted({s for s in shards if isinstance(s, int) and s >= 0})
            if isinstance(shards, list)
            else ()
        ),
        pages=_whole(entry.get("pages")),
        pages_per_min=_number(entry.get("pages_per_min")),
    )


# --- rendering ----------------------------------------------------------------------


def render_status(status: CrawlStatus, *, now: float) -> str:
    """The report, as lines of text."""
    if not status.exists:
        return f"Crawl {status.prefix!r}: no such crawl (no key {status.prefix}:meta)\n"
    lines = [f"Crawl {status.prefix!r}: {status.state}, {status.shards} shards"]
    lines += _node_lines(status, now=now)
    lines.append(
        f"Queued {status.queued}, in flight {status.in_flight}; hosts ready "
        f"{status.ready}, waiting {status.waiting}; seeds not yet taken {status.seeds}"
    )
    lines.append(totals_line(status))
    if status.by_depth:
        rows = [[str(d), str(n)] for d, n in sorted(status.by_depth.items())]
        lines += table(["depth", "queued+in flight"], rows)
    orphans = shard_ranges(status.orphans) if status.orphans else "none"
    lines.append(f"Shards without a live owner: {orphans}")
    settings = status.control.settings
    shown = ", ".join(
        f"{name}={cell(value, VALUE_WIDTH)}" for name, value in settings.items()
    )
    lines.append(f"Run-time settings: {shown or 'none'}")
    if status.control.ignored:
        names = ", ".join(cell(name) for name in status.control.ignored)
        lines.append(f"Control fields ignored (not this crawler's): {names}")
    return "".join(line + "\n" for line in lines)


def totals_line(status: CrawlStatus) -> str:
    """``Done 12: fetched 9, redirected 1; failed 2 (http_error 1, timed_out 1);
    held 3``: URLs whose lease was acknowledged, by fate, and those held (a crawl
    whose nodes kept no fate counters says so)."""
    fates = status.fates
    if status.acked and not any(fates.values()):  # written by an earlier version
        return f"Done {status.acked} (not counted by fate); held {status.held}"
    failed = {
        fate: fates[fate] for fate in FATES if fate in FAILED_FATES and fates.get(fate)
    }
    why = ", ".join(f"{fate} {count}" for fate, count in failed.items())
    return (
        f"Done {status.acked}: fetched {fates.get('fetched', 0)}, redirected "
        f"{fates.get('redirected', 0)}; failed {sum(failed.values())}"
        + (f" ({why})" if why else "")
        + f"; held {status.held}"
    )


def _node_lines(status: CrawlStatus, *, now: float) -> list[str]:
    alive = sum(node.alive for node in status.nodes)
    lines = [f"Nodes: {alive} alive, {len(status.nodes) - alive} dead"]
    if not status.nodes:
        return lines
    rows = [
        [
            cell(node.node_id),
            "alive" if node.alive else "dead",
            age(now - node.heartbeat) if node.heartbeat is not None else "?",
            shard_ranges(node.shards) or "-",
            str(node.pages) if node.pages is not None else "?",
            f"{rate:.1f}" if (rate := node.rate()) is not None else "?",
        ]
        for node in status.nodes
    ]
    headers = ["node", "state", "heartbeat", "shards", "pages", "pages/min"]
    lines += table(headers, rows, left=3)
    lines.append(
        "(pages/min: over the node's last heartbeat interval, else since it started)"
    )
    stray = [s for node in status.nodes for s in node.shards if s >= status.shards]
    if stray:
        lines.append(
            f"Nodes own shards up to {max(stray)}, beyond FRONTIER_SHARDS="
            f"{status.shards}: pass the crawl's -s FRONTIER_SHARDS"
        )
    return lines


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


def age(seconds: float) -> str:
    """``4`` -> ``4s ago``, ``125`` -> ``2m05s ago``, ``3700`` -> ``1h01m ago``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s ago"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s ago"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m ago"


def cell(text: str, width: int = CELL_WIDTH) -> str:
    """*text* fit for a terminal: control characters escaped, cut to *width*."""
    shown = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
        for c in text
    )
    return shown if len(shown) <= width else shown[: width - 1] + "…"


# --- reading replies defensively ------------------------------------------------------


def _mapping(reply: object) -> dict[bytes, bytes]:
    return reply if isinstance(reply, dict) else {}


def _count(reply: object) -> int:
    """A whole number Redis returned, or 0 for anything else (absent, an error)."""
    if isinstance(reply, int):
        return reply
    if isinstance(reply, bytes) and reply.lstrip(b"-").isdigit():
        return int(reply)
    return 0


def _decoded(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
