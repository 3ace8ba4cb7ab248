"""``scrapy frontier nodes``: the node table (``crawler.crawlstate.nodetable``) as a
terminal table or JSON, with each node's capacity and load. The dashboard's nodes
panel and ``--json`` share ``node_fields``; ``scrapy frontier status`` shows a
node's weight, load and state with ``weight_text``, ``load_text`` and
``state_text``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.reports.hosts import cell
from crawler.reports.status import (
    ABSENT,
    CELL_WIDTH,
    age,
    load_text,
    number_text,
    shard_ranges,
    state_text,
    table,
    weight_text,
)

if TYPE_CHECKING:
    from crawler.crawlstate.controls import Control
    from crawler.crawlstate.nodetable import NodeStatus, NodeTable

HEADERS = [
    "node",
    "alive",
    "host:pid",
    "shards",
    "weight",
    "capacity",
    "concurrency",
    "in flight",
    "ready hosts",
    "load",
    "pages/min",
    "state",
    "in/out",
]
# Columns aligned to the left: the node, alive, host:pid and shards.
LEFT = 4
NOTE = (
    "(weight: the node's dispatch weight, from its setting, measured or the "
    "default; capacity: pages/s measured while saturated; load: (in flight + "
    "ready hosts) / concurrency, above 1 hosts wait for the node; pages/min: over "
    "the last minute; in/out: shards gained and lost since it started)"
)


def render_nodes(node_table: NodeTable, *, prefix: str, now: float) -> str:
    """The table of every registered node, sorted by id, and what the columns mean."""
    nodes = node_table.nodes
    alive = sum(node.alive for node in nodes)
    lines = [f"Crawl {prefix!r}: {alive} nodes alive, {len(nodes) - alive} dead"]
    if nodes:
        rows = [_row(node, node_table.control, now=now) for node in nodes]
        lines += table(HEADERS, rows, left=LEFT)
        lines.append(NOTE)
    return "".join(line + "\n" for line in lines)


def _row(node: NodeStatus, control: Control, *, now: float) -> list[str]:
    heartbeat = age(now - node.heartbeat) if node.heartbeat is not None else "?"
    host = ABSENT if node.host is None else cell(node.host, CELL_WIDTH)
    pid = ABSENT if node.pid is None else str(node.pid)
    shards = f"{len(node.shards)}: {shard_ranges(node.shards)}" if node.shards else "0"
    return [
        cell(node.node_id, CELL_WIDTH),
        f"{'alive' if node.alive else 'dead'} ({heartbeat})",
        f"{host}:{pid}",
        shards,
        weight_text(node),
        number_text(node.capacity, "{:.2f}"),
        number_text(node.concurrency),
        number_text(node.in_flight),
        number_text(node.ready_hosts),
        load_text(node),
        number_text(node.pages_per_min, "{:.1f}"),
        state_text(node, control),
        _moves(node),
    ]


def _moves(node: NodeStatus) -> str:
    if node.shards_in is None and node.shards_out is None:
        return ABSENT
    return f"{number_text(node.shards_in)}/{number_text(node.shards_out)}"


def node_fields(node: NodeStatus, control: Control, *, now: float) -> dict[str, Any]:
    """One node as JSON-ready values (None: the entry does not say), for ``nodes
    --json`` and the dashboard."""
    return {
        "id": node.node_id,
        "alive": node.alive,
        "heartbeat_age": None if node.heartbeat is None else now - node.heartbeat,
        "host": node.host,
        "pid": node.pid,
        "shards": list(node.shards),
        "shard_ranges": shard_ranges(node.shards),
        "weight": node.weight,
        "weight_from": node.weight_from,
        "capacity": node.capacity,
        "concurrency": node.concurrency,
        "in_flight": node.in_flight,
        "ready_hosts": node.ready_hosts,
        "load": node.load,
        "pages": node.pages,
        "pages_per_min": node.rate(),
        "state": node.state,
        "drain_asked": node.node_id in control.draining,
        "dispatch": node.dispatch,
        "shards_in": node.shards_in,
        "shards_out": node.shards_out,
        "settings": control.node_settings.get(node.node_id, {}),
    }
