"""``bench.dispatch``'s second scenario: nodes join, are drained and die mid-crawl.

Two nodes start; every ``phase`` seconds one thing happens: a third node joins, a
fourth joins, one is killed with SIGKILL, one is drained, another is drained; the
last node finishes the crawl. Read at the server (the site's log): pages lost,
fetched twice (against the requests in flight at the kill), the smallest per-host
gap; from the node table (sampled every 0.5 s): shards moved at each join (owners
before the joiner registered against one round after) against 1/n of the shards,
how long the joiner took to register (start-up) and then to own its share, how
long a drained node took to give its shards away; from the processes: exit codes and when.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from bench import dispatchmeasure as dm
from bench import dispatchnodes as dn

if TYPE_CHECKING:
    import redis

    from bench.dispatchmeasure import Sample

SHARDS = 64  # FRONTIER_SHARDS' default, which the runs keep
# Seconds after a joiner first shows in the node table that its join is measured
# at (or at the next event, if sooner): one maintenance round (1 s) and a sample.
JOIN_WINDOW = 2.0
SHARE = 0.8  # a joiner owns its share once it holds this much of 1/n of the shards
# (what happens, to whom) at phase 1, 2, ...: the node labels of the scenario.
SCRIPT = (("join", "e3"), ("join", "e4"), ("kill", "e2"), ("drain", "e1"),
          ("drain", "e3"))  # fmt: skip


def run(
    client: redis.Redis, launch: dn.Launch, *, concurrency: int, phase: float
) -> tuple[list[dn.Node], list[dict[str, Any]], list[Sample]]:
    """Run the scenario; its nodes, the events as they happened, the samples."""
    nodes = {label: dn.start(launch, label, concurrency) for label in ("e1", "e2")}
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + launch.timeout
    with dn.TableSampler(client) as sampler:
        try:
            start = time.monotonic()
            for step, (what, label) in enumerate(SCRIPT, 1):
                _sleep_until(start + step * phase, list(nodes.values()))
                if all(node.poll() for node in nodes.values()):
                    break  # the crawl ended before the script did
                events.append(_act(client, launch, nodes, (what, label), concurrency))
            dn.wait_all(list(nodes.values()), deadline)
        finally:
            dn.stop_all(list(nodes.values()))
    return list(nodes.values()), events, sampler.samples


def _sleep_until(at: float, nodes: list[dn.Node]) -> None:
    while time.monotonic() < at and not all(node.poll() for node in nodes):
        time.sleep(0.1)


def _act(
    client: redis.Redis,
    launch: dn.Launch,
    nodes: dict[str, dn.Node],
    step: tuple[str, str],
    concurrency: int,
) -> dict[str, Any]:
    what, label = step
    print(f"  {what} {label}", flush=True)
    if what == "join":
        nodes[label] = dn.start(launch, label, concurrency)
        return {"event": what, "node": label, "at": nodes[label].started}
    if what == "kill":
        return {"event": what, "node": label, "at": dn.kill9(nodes[label])}
    return {"event": what, "node": label, **dn.drain(client, launch.redis_url, label)}


def measure(
    nodes: list[dn.Node],
    events: list[dict[str, Any]],
    samples: list[Sample],
    pages: list[dict[str, Any]],
    *,
    latency: float,
) -> list[dict[str, Any]]:
    """Each event's figures (see the module docstring)."""
    ends = [_effect(e, samples) for e in events[1:]] + [float("inf")]
    by_label = {node.label: node for node in nodes}
    figures = []
    for event, until in zip(events, ends, strict=True):
        row = dict(event)
        node = by_label[event["node"]]
        if event["event"] == "join":
            row |= _join(event, samples, until, SHARDS)
        elif event["event"] == "kill":
            row["in_flight_at_kill"] = dm.in_flight_at(
                pages, node.label, event["at"], latency
            )
            ages = [
                event["at"] - r["t"]
                for r in dm.twice_first(pages)
                if r["node"] == node.label and r["t"] <= event["at"]
            ]
            row["twice_after_kill"] = len(ages)
            row["oldest_twice_before_kill"] = round(max(ages), 2) if ages else None
        else:
            row |= _drain(event, node, samples)
        figures.append(row)
    return figures


def _effect(event: dict[str, Any], samples: list[Sample]) -> float:
    """When an event starts to change who owns what: a joiner once it shows in
    the node table, a kill or a drain at once."""
    if event["event"] != "join":
        return float(event["at"])
    seen = [t for t, e in samples if event["node"] in e]
    return seen[0] if seen else float("inf")


def _join(
    event: dict[str, Any], samples: list[Sample], until: float, shards: int
) -> dict[str, Any]:
    """Shards moved by a join (owners before it vs once it owns its share or the
    next event comes), against 1/n of the shards."""
    label = event["node"]
    seen = [t for t, e in samples if label in e]
    if not seen:
        return {"moved": None}
    end = min(seen[0] + JOIN_WINDOW, until)
    after = [(t, e) for t, e in samples if label in e and t < end]
    before = [e for t, e in samples if t < seen[0]]
    if not before or not after:  # another event came first: not this join's alone
        return {"moved": None, "registered_after": round(seen[0] - event["at"], 1)}
    live = len(after[-1][1])
    target = shards / live
    owned = [t for t, e in after if len(e[label].get("shards") or []) >= SHARE * target]
    settled = after[-1][1]
    old, new = dm.owners(before[-1]), dm.owners(settled)
    moved = sum(1 for s, node in new.items() if old.get(s) != node)
    return {
        "nodes_after": live,
        "one_nth": round(target, 1),
        "moved": moved,
        "moved_over_one_nth": round(moved / target, 2),
        "joiner_owns": len(settled[label].get("shards") or []),
        "registered_after": round(after[0][0] - event["at"], 1),
        "owns_share_after": round(owned[0] - seen[0], 1) if owned else None,
    }


def _drain(
    event: dict[str, Any], node: dn.Node, samples: list[Sample]
) -> dict[str, Any]:
    """How long the drained node took to hold no shard and to exit, and how."""
    label = event["node"]
    empty = [
        t
        for t, e in samples
        if t >= event["at"] and not (e.get(label, {}).get("shards") or [])
    ]
    return {
        "shards_gone_after": round(empty[0] - event["at"], 1) if empty else None,
        "exited_after": round(node.exited - event["at"], 1) if node.exited else None,
        "exit_code": node.process.returncode,
        "finish_reason": node.stats().get("finish_reason"),
    }
