"""`scrapy frontier nodes|drain|set --node|status`, run as an operator would, on
node entries written as nodes write them (issue 24's fields, and older entries
without them), and the control hash fields they leave in Redis."""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

import pytest
from scrapy.settings import Settings

from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.node.membership import Membership, NodeReport
from tests.integration.test_frontier_commands import KEYS, frontier, one_line_error

pytestmark = pytest.mark.integration


def new_entry(node: str, shards: list[int], **fields: Any) -> dict[str, Any]:
    """A registry entry with every field of issue 24's node table."""
    now = time.time()
    entry = {
        "id": node,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": now - 600,
        "version": "1.0",
        "heartbeat": now - 2,
        "shards": shards,
        "pages": 1200,
        "pages_per_min": 150.0,
        "concurrency": 16,
        "in_flight": 12,
        "ready_hosts": 8,
        "capacity": 3.5,
        "weight": 3.5,
        "weight_from": "measured",
        "load": 1.25,
        "state": "saturated",
        "dispatch": "least-load",
        "shards_in": 2,
        "shards_out": 1,
    }
    return entry | fields


def old_entry(node: str, shards: list[int]) -> dict[str, Any]:
    """A registry entry as a node before issue 24 wrote it."""
    now = time.time()
    return {
        "id": node,
        "host": "old-host",
        "pid": 4242,
        "started": now - 600,
        "version": "0.9",
        "heartbeat": now - 3,
        "shards": shards,
        "pages": 300,
        "pages_per_min": 30.5,
    }


def register(redis, entry: dict[str, Any], *, alive: bool = True) -> None:
    redis.hset(KEYS.nodes, entry["id"], json.dumps(entry))
    if alive:
        redis.set(KEYS.heartbeat(entry["id"]), "1", px=30_000)


@pytest.fixture
def node_cluster(redis) -> None:
    """A fast node (new fields) on shards 0-4, a slow one (new fields) on 5-6, an
    old one (no new fields) on 7, a dead one, and an entry that is not JSON."""
    redis.hset(KEYS.meta, "schema_version", "4")
    register(redis, new_entry("fast", [0, 1, 2, 3, 4]))
    register(
        redis,
        new_entry(
            "slow",
            [5, 6],
            concurrency=4,
            in_flight=1,
            ready_hosts=0,
            capacity=None,
            weight=1.0,
            weight_from="default",
            load=0.25,
            state="idle",
            shards_in=0,
            shards_out=3,
        ),
    )
    register(redis, old_entry("old", [7]))
    register(redis, old_entry("gone", []), alive=False)
    redis.hset(KEYS.nodes, "junk", b"\xff not json")


def cells(line: str) -> list[str]:
    """A table line's cells: columns are apart by two spaces or more."""
    return [cell.strip() for cell in line.split("  ") if cell.strip()]


def rows(stdout: str) -> dict[str, list[str]]:
    """The table's rows by node id (between the header and the note)."""
    lines = stdout.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("("))
    return {cells(line)[0]: cells(line) for line in lines[2:end]}


# --- nodes ----------------------------------------------------------------------------


def test_nodes_lists_every_field_and_dashes_what_older_entries_lack(
    redis, redis_url, node_cluster
):
    result = frontier(redis_url, "nodes")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Crawl 'bfs': 3 nodes alive, 2 dead"
    assert cells(lines[1]) == [
        "node", "alive", "host:pid", "shards", "weight", "capacity", "concurrency",
        "in flight", "ready hosts", "load", "pages/min", "state", "in/out",
    ]  # fmt: skip
    table = rows(result.stdout)
    assert list(table) == ["fast", "gone", "junk", "old", "slow"]  # sorted by id
    fast = table["fast"]
    assert fast[1].startswith("alive (")
    assert fast[2] == f"{socket.gethostname()}:{os.getpid()}"
    assert fast[3:] == [
        "5: 0-4", "3.50 (measured)", "3.50", "16", "12", "8", "1.25", "150.0",
        "saturated", "2/1",
    ]  # fmt: skip
    assert table["slow"][3:] == [
        "2: 5-6", "1.00 (default)", "-", "4", "1", "0", "0.25", "150.0", "idle",
        "0/3",
    ]  # fmt: skip
    assert table["old"][2:] == [
        "old-host:4242", "1: 7", "-", "-", "-", "-", "-", "-", "30.5", "-", "-",
    ]  # fmt: skip
    assert table["gone"][1].startswith("dead (")
    assert table["junk"][1:] == ["dead (?)", "-:-", "0", *["-"] * 9]


def test_nodes_json_gives_each_field_or_null(redis, redis_url, node_cluster):
    result = frontier(redis_url, "nodes", "--json")
    assert result.returncode == 0, result.stderr
    table = json.loads(result.stdout)
    assert table["prefix"] == "bfs"
    by_id = {node["id"]: node for node in table["nodes"]}
    assert [node["id"] for node in table["nodes"]] == sorted(by_id)
    fast = by_id["fast"]
    assert fast["alive"] is True
    assert fast["shards"] == [0, 1, 2, 3, 4]
    assert (fast["weight"], fast["weight_from"], fast["capacity"]) == (
        3.5,
        "measured",
        3.5,
    )
    assert (fast["concurrency"], fast["in_flight"], fast["ready_hosts"]) == (16, 12, 8)
    assert (fast["load"], fast["state"], fast["dispatch"]) == (
        1.25,
        "saturated",
        "least-load",
    )
    assert (fast["shards_in"], fast["shards_out"]) == (2, 1)
    assert 1 < fast["heartbeat_age"] < 60
    old = by_id["old"]
    assert old["pages_per_min"] == 30.5
    for name in ("weight", "capacity", "concurrency", "in_flight", "load", "state"):
        assert old[name] is None
    assert by_id["junk"]["alive"] is False


def test_nodes_of_a_crawl_without_nodes(redis_url):
    result = frontier(redis_url, "nodes")
    assert (result.returncode, result.stdout) == (
        0,
        "Crawl 'bfs': 0 nodes alive, 0 dead\n",
    )


def test_status_shows_each_nodes_weight_load_and_state(redis, redis_url, node_cluster):
    redis.hset(KEYS.control, "drain:slow", "1")
    result = frontier(redis_url, "status")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("node "))
    assert header.split()[-4:] == ["pages/min", "weight", "load", "doing"]
    fast = next(line for line in lines if line.startswith("fast "))
    assert fast.split()[-4:] == ["3.50", "(measured)", "1.25", "saturated"]
    assert next(line for line in lines if line.startswith("slow ")).endswith(
        "drain asked"
    )
    assert (
        next(line for line in lines if line.startswith("old ")).split()[-3:]
        == ["-"] * 3
    )


# --- set --node -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field", "value"),
    [
        (["--node", "slow", "CONCURRENT_REQUESTS", "4"], "node:slow:set:CONCURRENT_REQUESTS", b"4"),
        (["--node", "slow", "concurrent_requests=4"], "node:slow:set:CONCURRENT_REQUESTS", b"4"),
        (["--node", "old", "FRONTIER_NODE_WEIGHT=0.25"], "node:old:set:FRONTIER_NODE_WEIGHT", b"0.25"),
        (["CONCURRENT_REQUESTS=32"], "set:CONCURRENT_REQUESTS", b"32"),
        (["bfs", "DEPTH_LIMIT=3"], "set:DEPTH_LIMIT", b"3"),
        (["--node", "gone", "DOWNLOAD_DELAY", "2"], "node:gone:set:POLITENESS_MIN_DELAY", b"2"),
        (["POLITENESS_OVERRIDES", '{"a=b.example": 3}'], "set:POLITENESS_OVERRIDES", b'{"a=b.example": 3}'),
    ],
)  # fmt: skip
@pytest.mark.usefixtures("node_cluster")
def test_set_writes_a_checked_value_for_the_crawl_or_one_node(
    redis, redis_url, args, field, value
):
    result = frontier(redis_url, "set", *args)
    assert result.returncode == 0, result.stderr
    assert redis.hgetall(KEYS.control) == {field.encode(): value}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--node", "nobody", "CONCURRENT_REQUESTS", "4"], ["no node 'nobody'", "nodes"]),
        (["--node", "slow", "CONCURRENT_REQUESTS", "0"], ["CONCURRENT_REQUESTS", ">= 1"]),
        (["CONCURRENT_REQUESTS=2.5"], ["CONCURRENT_REQUESTS", "integer"]),
        (["--node", "slow", "FRONTIER_NODE_WEIGHT", "-1"], ["FRONTIER_NODE_WEIGHT"]),
        (["FRONTIER_NODE_WEIGHT=heavy"], ["FRONTIER_NODE_WEIGHT", "number"]),
        (["--node", "slow", "FRONTIER_SHARDS", "4"], ["FRONTIER_SHARDS cannot change"]),
    ],
)  # fmt: skip
def test_set_refuses_unknown_nodes_and_bad_values_in_one_line(
    redis, redis_url, node_cluster, args, words
):
    one_line_error(frontier(redis_url, "set", *args), *words)
    assert not redis.exists(KEYS.control)


def test_set_checks_a_value_against_each_nodes_own(redis, redis_url, node_cluster):
    # a node's own value written by hand, bad together with the crawl-wide one
    redis.hset(KEYS.control, "node:slow:set:POLITENESS_DAY_HOURS", "08:00-20:00")
    assert frontier(redis_url, "set", "POLITENESS_JITTER=0.1").returncode == 0
    redis.hset(KEYS.control, "node:slow:set:POLITENESS_JITTER", "-3")
    one_line_error(
        frontier(redis_url, "set", "DEPTH_LIMIT=4"), "POLITENESS_JITTER", "--unset"
    )
    one_line_error(
        frontier(redis_url, "set", "--node", "slow", "DEPTH_LIMIT=4"),
        "POLITENESS_JITTER",
    )
    assert frontier(redis_url, "set", "--node", "fast", "DEPTH_LIMIT=4").returncode == 0
    assert not redis.hexists(KEYS.control, "set:DEPTH_LIMIT")


def test_set_unset_for_one_node_leaves_the_crawl_wide_value(
    redis, redis_url, node_cluster
):
    redis.hset(
        KEYS.control,
        mapping={
            "set:CONCURRENT_REQUESTS": "16",
            "node:slow:set:CONCURRENT_REQUESTS": "4",
        },
    )
    result = frontier(
        redis_url, "set", "--node", "slow", "CONCURRENT_REQUESTS", "--unset"
    )
    assert result.returncode == 0, result.stderr
    assert "dropped" in result.stdout
    assert redis.hgetall(KEYS.control) == {b"set:CONCURRENT_REQUESTS": b"16"}
    again = frontier(
        redis_url, "set", "--node", "slow", "CONCURRENT_REQUESTS", "--unset"
    )
    assert again.returncode == 0
    assert "had no run-time value in node 'slow'" in again.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["set", "CONCURRENT_REQUESTS"],
        ["set", "A=1", "B=2"],
        ["pause", "--node", "slow"],
        ["drain"],
        ["drain", "a", "b"],
    ],
)
def test_usage_errors(redis_url, args):
    assert frontier(redis_url, *args).returncode == 2


# --- drain ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "words"),
    [("nobody", ["no node 'nobody'"]), ("gone", ["'gone'", "not alive"])],
)
def test_drain_refuses_an_unknown_or_dead_node_in_one_line(
    redis, redis_url, node_cluster, node, words
):
    one_line_error(frontier(redis_url, "drain", node), *words)
    assert not redis.exists(KEYS.control)


def test_drain_tells_the_node_and_hands_its_shards_over(redis, redis_url, node_cluster):
    owners = {0: "fast", 1: "fast", 5: "slow", 6: "slow", 7: "old"}
    for shard, owner in owners.items():
        redis.set(KEYS.shard(shard).owner, owner, px=30_000)
    result = frontier(redis_url, "drain", "slow")
    assert result.returncode == 0, result.stderr
    assert redis.hget(KEYS.control, "drain:slow") == b"1"
    assert "Node 'slow' of crawl 'bfs' drains: 2 shards handed over to the 2 other" in (
        result.stdout
    )
    for shard in (5, 6):  # at once, to a live node that is not draining
        assert redis.get(KEYS.shard(shard).owner) in {b"fast", b"old"}
    for shard in (0, 1, 7):
        assert redis.get(KEYS.shard(shard).owner) == owners[shard].encode()
    listed = json.loads(frontier(redis_url, "nodes", "--json").stdout)
    slow = next(node for node in listed["nodes"] if node["id"] == "slow")
    assert slow["drain_asked"] is True


def test_nodes_reads_the_entries_real_nodes_write(redis, redis_url, settings):
    config = FrontierConfig.from_settings(Settings(settings(FRONTIER_SHARDS=8)), "bfs")
    redis.hset(KEYS.meta, "schema_version", "4")
    fast = Membership(redis, KEYS, config, "fast")
    slow = Membership(redis, KEYS, config, "slow")
    now = time.time()
    fast.beat(now, NodeReport(pages=40, concurrency=16, in_flight=9))
    slow.beat(now, NodeReport(pages=5, concurrency=4, in_flight=4, weight_setting=0.5))
    result = frontier(redis_url, "nodes", "--json")
    assert result.returncode == 0, result.stderr
    by_id = {node["id"]: node for node in json.loads(result.stdout)["nodes"]}
    assert list(by_id) == ["fast", "slow"]
    owned = {
        shard: redis.get(KEYS.shard(shard).owner).decode()
        for shard in range(8)
        if redis.exists(KEYS.shard(shard).owner)
    }
    for node_id, node in by_id.items():
        assert node["alive"] is True
        assert node["shards"] == [s for s, owner in owned.items() if owner == node_id]
        assert node["host"] == socket.gethostname()
        assert node["pid"] == os.getpid()
    assert (by_id["fast"]["concurrency"], by_id["fast"]["in_flight"]) == (16, 9)
    assert (by_id["slow"]["concurrency"], by_id["slow"]["in_flight"]) == (4, 4)
    assert (by_id["slow"]["weight"], by_id["slow"]["weight_from"]) == (0.5, "setting")
    text = frontier(redis_url, "nodes").stdout
    assert "0.50 (setting)" in rows(text)["slow"]
