"""The JSON state the dashboard serves: the crawl's status and totals (the very
``read_status`` and ``CrawlStatus.totals`` of ``scrapy frontier status``), its
pages done a minute over the last hour, and its busiest and most failing hosts
with their crawl strategy (``FRONTIER_SITE_STRATEGY``).

The work is bounded whatever the crawl's size: the status reads one hash and a few
counters per shard; hosts come ranked from the traffic middleware's sorted sets (top
N only, their counters in one pipeline); the paused hosts are counted from the
timeout records only while there are at most ``HEALTH_LIMIT`` of them. Nothing
Redis holds makes it raise: what this crawler did not write shows as absent or as
text, and the page shows text only.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from crawler.crawlstate.readers import decoded, encoded, mapping, whole_count
from crawler.crawlstate.sitecounters import STRATEGY
from crawler.crawlstate.status import CrawlStatus, read_status
from crawler.frontier.node.progress import PACE_MINUTES, pace_fields
from crawler.policy.progress import fraction_done
from crawler.policy.tiers import BadHealthRecordError, HostHealth
from crawler.reports.hosts import health_text
from crawler.reports.nodes import node_fields
from crawler.reports.status import crawl_rate, drain_estimate, shard_ranges

if TYPE_CHECKING:
    import redis

    from crawler.crawlstate.keys import CrawlKeys
    from crawler.crawlstate.nodetable import NodeStatus

# Timeout records counted for "paused hosts"; with more, the count is not shown.
HEALTH_LIMIT = 10_000
# Longest host name or text field sent (hostile values are cut, never dropped).
TEXT_LIMIT = 200
# The pause time of a timeout record, as HostHealth.to_json writes it.
_PAUSE_FIELD = re.compile(rb'"p":(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)[,}]')
# Counter fields of a host's traffic hash sent to the page.
HOST_FIELDS = (
    "requests",
    "bytes",
    "2xx",
    "3xx",
    "4xx",
    "5xx",
    "errors",
    "failures",
    "traps",
)


def read_state(
    client: redis.Redis, keys: CrawlKeys, *, shards: int, top: int, now: float
) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready values: about five round trips."""
    status = read_status(client, keys, shards)
    pipe = client.pipeline(transaction=False)
    pipe.zrevrange(keys.traffic_rank("requests"), 0, top - 1)
    pipe.zrevrangebyscore(keys.traffic_rank("failures"), "+inf", "(0", 0, top)
    pipe.zrangebyscore(keys.pace_nodes, now - PACE_MINUTES * 60, "+inf")
    pipe.hlen(keys.health)
    busiest, failing, paced, health_count = pipe.execute(raise_on_error=False)
    busiest, failing, paced = _names(busiest), _names(failing), _names(paced)
    # Only while there are few enough records to count paused hosts in them.
    counted = whole_count(health_count) <= HEALTH_LIMIT
    traffic, strategies, rings, records = _details(
        client, keys, [*busiest, *failing], paced, health=counted
    )
    rows = {
        host: _host_row(host, reply, records.get(host), now)
        | {"strategy": _strategy(strategies.get(host))}
        for host, reply in traffic.items()
    }
    return {
        **status_state(status, now=now),
        "hosts": {
            "ready": status.ready,
            "waiting": status.waiting,
            "total": status.ready + status.waiting,
            "paused": _paused(records, now) if counted else None,
        },
        "busiest": [rows[host] for host in busiest],
        "failing": [rows[host] for host in failing],
        "pace": pace_series(rings, now=now),
    }


def _details(
    client: redis.Redis,
    keys: CrawlKeys,
    hosts: list[str],
    nodes: list[str],
    *,
    health: bool,
) -> tuple[dict[str, object], dict[str, object], dict[str, object], dict[str, bytes]]:
    """One round trip: the traffic counters and crawl strategy of *hosts*, the
    pace rings of *nodes*, and the timeout records (host -> record) if *health*."""
    unique = list(dict.fromkeys(hosts))
    pipe = client.pipeline(transaction=False)
    for host in unique:
        pipe.hgetall(encoded(keys.traffic(host)))
    for host in unique:
        pipe.hget(encoded(keys.site(host)), STRATEGY)
    for node in nodes:
        pipe.hgetall(encoded(keys.pace(node)))
    if health:
        pipe.hgetall(keys.health)
    replies = pipe.execute(raise_on_error=False)
    count = len(unique)
    traffic = dict(zip(unique, replies, strict=False))
    strategies = dict(zip(unique, replies[count:], strict=False))
    rings = dict(zip(nodes, replies[2 * count :], strict=False))
    records = mapping(replies[-1]) if health else {}
    return traffic, strategies, rings, {decoded(h): raw for h, raw in records.items()}


def status_state(status: CrawlStatus, *, now: float) -> dict[str, Any]:
    """The status part of the state: what ``scrapy frontier status`` shows."""
    return {
        "prefix": status.prefix,
        "now": now,
        "exists": status.exists,
        "state": status.state,
        "paused": status.control.paused,
        "shards": status.shards,
        "totals": asdict(status.totals()),
        "by_depth": [
            [depth, count] for depth, count in sorted(status.by_depth.items())
        ],
        # A finished crawl needs no owners: None, and the page shows no list.
        "orphans": shard_ranges(status.orphans) if status.work_left else None,
        "pages_per_min": crawl_rate(status),
        "progress": progress_state(status, now=now),
        "nodes": [node_state(node, status, now=now) for node in status.nodes],
    }


def node_state(node: NodeStatus, status: CrawlStatus, *, now: float) -> dict[str, Any]:
    """One row of the nodes panel: the node table's fields (``scrapy frontier nodes
    --json``'s), its shards as ranges, why it is idle, every text cut and made
    valid UTF-8."""
    fields = node_fields(node, status.control, now=now)
    texts = ("id", "host", "weight_from", "state", "dispatch")
    return fields | {
        **{name: text(fields[name]) for name in texts if fields[name] is not None},
        "shards": shard_ranges(node.shards),
        "shard_count": len(node.shards),
        "settings": {
            text(name): text(value) for name, value in fields["settings"].items()
        },
        "idle": status.idle_reason(node.shards, now=now) if node.alive else None,
    }


def progress_state(status: CrawlStatus, *, now: float) -> dict[str, Any]:
    """The page's lead: the share done of what is known (done + queued + held +
    in flight), seconds since the crawl started, and the estimate of the time to
    drain what is queued now, worded as ``scrapy frontier status`` words it."""
    totals = status.totals()
    left = totals.queued + totals.held + totals.in_flight
    return {
        "fraction": fraction_done(totals.done, left),
        "known": totals.done + left,
        "elapsed": None if status.started is None else now - status.started,
        "eta": drain_estimate(status, now=now),
        "next_held": status.next_held if status.held else None,
    }


def pace_series(rings: dict[str, object], *, now: float) -> dict[str, Any]:
    """Pages done a minute over the last hour, oldest first: ``minutes`` (the minute
    numbers, ``time // 60``), ``cluster`` and each node's counts. A slot holding an
    older minute (the ring wrapped) or a value that is not a count is 0."""
    last = int(now // 60)
    minutes = list(range(last - PACE_MINUTES + 1, last + 1))
    nodes: dict[str, list[int]] = {}
    for node, reply in rings.items():
        fields = mapping(reply)
        counts = []
        for minute in minutes:
            minute_field, pages_field = pace_fields(minute)
            held = fields.get(minute_field.encode())
            same = held is not None and whole_count(held) == minute
            counts.append(
                max(0, whole_count(fields.get(pages_field.encode()))) if same else 0
            )
        nodes[text(node)] = counts
    cluster = (
        [sum(column) for column in zip(*nodes.values(), strict=True)]
        if nodes
        else [0] * len(minutes)
    )
    return {"minutes": minutes, "cluster": cluster, "nodes": nodes}


def _host_row(
    host: str, reply: object, health: bytes | None, now: float
) -> dict[str, Any]:
    """One host's row: its counters (0 if absent or not counts), its delay in force
    and reason as the traffic middleware last wrote them, and slow/paused."""
    fields = {decoded(k): v for k, v in mapping(reply).items()}
    row: dict[str, Any] = {"host": text(host)}
    row |= {name: whole_count(fields.get(name)) for name in HOST_FIELDS}
    row["delay"] = text(decoded(fields.get("delay", b"")))
    row["reason"] = text(decoded(fields.get("reason", b"")))
    row["health"] = health_text(health, now=now)
    return row


def _strategy(reply: object) -> str:
    """A host's crawl strategy and why, as the crawl wrote it (``""``: none)."""
    return text(decoded(reply)) if isinstance(reply, bytes) else ""


def _paused(records: dict[str, bytes], now: float) -> int:
    """Hosts whose timeout record pauses them now (records not ours are skipped).

    Most records pause nothing: their pause time (``"p":``, as ``HostHealth``
    writes it) is read without parsing the JSON, and only a record that would
    pause its host now is parsed whole, so 10,000 records cost milliseconds."""
    paused = 0
    for raw in records.values():
        found = _PAUSE_FIELD.search(raw) if isinstance(raw, bytes) else None
        if found is None or float(found[1]) <= now:
            continue
        try:
            paused += HostHealth.from_json(raw).paused_until > now
        except BadHealthRecordError:
            continue
    return paused


def _names(reply: object) -> list[str]:
    """Members of a sorted set Redis returned, as text; none for an error."""
    if not isinstance(reply, list):
        return []
    return [decoded(name) for name in reply if isinstance(name, bytes)]


def text(value: str, limit: int = TEXT_LIMIT) -> str:
    """*value* cut to *limit* characters, with lone surrogates (bytes that were not
    UTF-8) shown as ``\\udcXX`` escapes so the JSON is valid UTF-8."""
    shown = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
