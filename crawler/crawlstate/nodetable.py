"""The node table: each node's entry in the ``<prefix>:nodes`` hash, read as
``scrapy frontier nodes|status``, the dashboard and the metrics show it.

A node rewrites its JSON entry at every heartbeat
(``crawler.frontier.node.membership``): who it is, the shards it owns, its pages,
and, since nodes of unequal size share a crawl, its capacity and load (concurrency,
requests in flight, ready hosts in its shards, pages a minute, dispatch weight and
where it comes from, its state, shards gained and lost). Entries of older nodes
lack the newer fields, and anything Redis holds may be hostile: every field is read
defensively, and one that is absent or not what a node writes is None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crawler.crawlstate.controls import Control, read_control
from crawler.crawlstate.readers import (
    alive,
    decoded,
    finite_number,
    mapping,
    registry_entry,
    whole_number,
)

if TYPE_CHECKING:
    import redis

    from crawler.crawlstate.keys import CrawlKeys

# Longest text field of an entry kept (host name, state, dispatch policy).
TEXT_LIMIT = 200


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """One entry of the node registry; None where the entry did not say.

    *state* is what the node says of itself (``draining``, ``saturated``, ``idle``
    or ``working``), *load* is (in flight + ready hosts) / concurrency, *capacity*
    pages/s measured while saturated, *weight_from* ``setting``, ``measured`` or
    ``default``."""

    node_id: str
    alive: bool
    heartbeat: float | None = None
    started: float | None = None
    shards: tuple[int, ...] = ()
    pages: int | None = None
    pages_per_min: float | None = None
    host: str | None = None
    pid: int | None = None
    concurrency: int | None = None
    in_flight: int | None = None
    ready_hosts: int | None = None
    capacity: float | None = None
    weight: float | None = None
    weight_from: str | None = None
    load: float | None = None
    state: str | None = None
    dispatch: str | None = None
    shards_in: int | None = None
    shards_out: int | None = None

    def rate(self) -> float | None:
        """Pages a minute: the node's own figure, else its average since start."""
        if self.pages_per_min is not None:
            return self.pages_per_min
        pages, heartbeat, started = self.pages, self.heartbeat, self.started
        if pages is None or heartbeat is None or started is None:
            return None
        minutes = (heartbeat - started) / 60
        return pages / minutes if minutes > 0 else None


@dataclass(frozen=True, slots=True)
class NodeTable:
    """Every registered node, sorted by id, and the control hash (who was told to
    drain, each node's own run-time settings)."""

    nodes: list[NodeStatus]
    control: Control

    def find(self, node_id: str) -> NodeStatus | None:
        """The entry of *node_id*, None if no such node is registered."""
        return next((node for node in self.nodes if node.node_id == node_id), None)


def read_node_table(client: redis.Redis, keys: CrawlKeys) -> NodeTable:
    """The node table and the control hash: two round trips."""
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(keys.nodes)
    pipe.hgetall(keys.control)
    registry, control = pipe.execute(raise_on_error=False)
    entries = {decoded(node): raw for node, raw in mapping(registry).items()}
    living = alive(client, keys, entries)
    nodes = [node_status(node, entries[node], living[node]) for node in sorted(entries)]
    return NodeTable(nodes, read_control(mapping(control)))


def node_status(node_id: str, raw: bytes, alive: bool) -> NodeStatus:
    """The registry entry *raw* of *node_id*, read defensively."""
    entry = registry_entry(raw)
    if entry is None:
        return NodeStatus(node_id, alive)
    return NodeStatus(
        node_id,
        alive,
        heartbeat=finite_number(entry.get("heartbeat")),
        started=finite_number(entry.get("started")),
        shards=_shards(entry.get("shards")),
        pages=whole_number(entry.get("pages")),
        pages_per_min=finite_number(entry.get("pages_per_min")),
        host=_text(entry.get("host")),
        pid=whole_number(entry.get("pid")),
        concurrency=whole_number(entry.get("concurrency")),
        in_flight=whole_number(entry.get("in_flight")),
        ready_hosts=whole_number(entry.get("ready_hosts")),
        capacity=finite_number(entry.get("capacity")),
        weight=finite_number(entry.get("weight")),
        weight_from=_text(entry.get("weight_from")),
        load=finite_number(entry.get("load")),
        state=_text(entry.get("state")),
        dispatch=_text(entry.get("dispatch")),
        shards_in=whole_number(entry.get("shards_in")),
        shards_out=whole_number(entry.get("shards_out")),
    )


def _shards(value: Any) -> tuple[int, ...]:
    """The shards an entry lists: non-negative ints, sorted, once each."""
    if not isinstance(value, list):
        return ()
    return tuple(
        sorted(
            {
                s
                for s in value
                if isinstance(s, int) and not isinstance(s, bool) and s >= 0
            }
        )
    )


def _text(value: Any) -> str | None:
    """A string field of an entry, cut to TEXT_LIMIT; None for anything else."""
    return value[:TEXT_LIMIT] if isinstance(value, str) else None
