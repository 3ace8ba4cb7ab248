"""``scrapy frontier nodes`` and ``scrapy frontier drain NODE``: the crawl's nodes,
and taking one out of it without waiting for ``FRONTIER_NODE_TTL``.

``nodes`` prints the node table (``crawler.reports.nodes``; ``--json`` for
scripts). ``drain`` writes ``drain:<NODE>`` to the control hash, so the node stops
taking work and exits 0 once its in-flight requests are done, then hands its shards
to the other live nodes at once (``crawler.frontier.node.handover.hand_over``, their
owner leases fenced): they do not wait for the drained node's leases to expire.
"""

from __future__ import annotations

import json
import time
from typing import IO, TYPE_CHECKING

from crawler.commands.crawltarget import crawl_shards
from crawler.commands.steering import HEARTBEAT, ControlError
from crawler.crawlstate import controls
from crawler.crawlstate.nodetable import read_node_table
from crawler.frontier.node.handover import hand_over
from crawler.reports.nodes import node_fields, render_nodes

if TYPE_CHECKING:
    import argparse

    import redis

    from crawler.crawlstate.keys import CrawlKeys


def nodes(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """The node table, as text or ``--json``; 0 even when no node is registered."""
    table = read_node_table(client, keys)
    now = time.time()
    if opts.json:
        rows = [node_fields(node, table.control, now=now) for node in table.nodes]
        out.write(json.dumps({"prefix": keys.prefix, "nodes": rows}) + "\n")
    else:
        out.write(render_nodes(table, prefix=keys.prefix, now=now))
    return 0


def drain(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """Tell a live node to leave the crawl and hand its shards to the others;
    refused (one line, exit 1) for a node that is not registered or not alive."""
    node_id = opts.words[0]
    table = read_node_table(client, keys)
    node = table.find(node_id)
    if node is None:
        raise ControlError(
            f"no node {node_id!r} in crawl {keys.prefix!r} (`scrapy frontier "
            "nodes` lists them)"
        )
    if not node.alive:
        raise ControlError(
            f"node {node_id!r} of crawl {keys.prefix!r} is not alive: nothing to "
            "drain (its shards go to the live nodes once its owner leases expire)"
        )
    try:
        shards = crawl_shards(client, keys, opts.settings)
    except ValueError as exc:
        raise ControlError(str(exc)) from None
    controls.drain(client, keys, node_id)
    moved = hand_over(shards, node_id, time.time())
    others = sum(other.alive for other in table.nodes) - 1
    to = f"the {others} other live nodes" if others else "the next node to join"
    out.write(
        f"Node {node_id!r} of crawl {keys.prefix!r} drains: {moved} shards handed "
        f"over to {to}; it exits once its requests in flight are done, stopping "
        f"{HEARTBEAT}\n"
    )
    return 0
