"""`scrapy frontier status|seed|pause|resume|set|reset`, run as an operator would,
against crawl state written by the real frontier store."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.store.store import FrontierStore, Lease, Pending, PopOrder
from crawler.policy.order import level_of
from crawler.policy.sharding import shard_of
from crawler.spiders.bfs import BfsSpider
from tests.servers import ROOT, running_site, wait_for

if TYPE_CHECKING:
    from collections.abc import Callable

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")
SHARDS = 8
# Shards node-a owns; node-dead owns 7; nobody owns 6.
OWNED = range(6)
# (depth, tier) of the requests queued for every host.
REQUESTS = [(0, 0), (1, 0), (1, 1), (2, 0)]


def frontier(
    redis_url: str, *args: str, stdin: str | bytes = b"", shards: int = SHARDS
) -> subprocess.CompletedProcess[str]:
    """Run `scrapy frontier ARGS` on the test Redis with 8 shards (or *shards*)."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    options = ["-s", f"REDIS_URL={redis_url}", "-s", f"FRONTIER_SHARDS={shards}"]
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "frontier", *args, *options],
        cwd=ROOT,
        capture_output=True,
        input=data,
        timeout=60,
        check=False,
    )
    return subprocess.CompletedProcess(
        result.args,
        result.returncode,
        result.stdout.decode("utf-8", "replace"),
        result.stderr.decode("utf-8", "replace"),
    )


def one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 1, result
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("scrapy frontier: ")
    for word in words:
        assert word in result.stderr


def hosts_in(shards: range | list[int], count: int) -> list[str]:
    """*count* host names that fall in *shards*."""
    found = []
    for i in range(10_000):
        host = f"h{i}.example"
        if shard_of(host, SHARDS) in shards:
            found.append(host)
            if len(found) == count:
                return found
    raise AssertionError("not enough hosts")


def register(redis, node: str, *, alive: bool, **entry: Any) -> None:
    redis.hset(KEYS.nodes, node, json.dumps({"id": node, **entry}))
    if alive:
        redis.set(KEYS.heartbeat(node), "1", px=30_000)


@pytest.fixture
def crawl_state(redis, settings) -> dict[str, Any]:
    """Hosts with queued requests at depths 0-2, two popped (one acked, its host
    now waiting), a live node owning shards 0-5, a dead one owning 7, and an
    entry that is not JSON."""
    now = time.time()
    config = FrontierConfig.from_settings(Settings(settings()), "bfs")
    store = FrontierStore.on(redis, config)
    store.prepare(now)
    hosts = hosts_in(OWNED, 4) + hosts_in([6, 7], 2)
    batch = [
        Pending(shard_of(h, SHARDS), h, level_of(d, t), "", f"{h} {d} {t}")
        for h in hosts
        for d, t in REQUESTS
    ]
    store.flush(batch, [], now)
    for shard in OWNED:
        redis.set(KEYS.shard(shard).owner, "node-a", px=30_000)
    redis.set(KEYS.shard(7).owner, "node-dead", px=30_000)
    first, _second = (pop(store, host, now) for host in hosts[:2])
    store.flush([], [(first[0], 60.0)], now)  # acked: its host waits 60 s
    a_node = {"started": now - 120, "heartbeat": now - 2, "shards": list(OWNED)}
    register(redis, "node-a", alive=True, **a_node, pages=240, pages_per_min=90.0)
    dead = {"started": now - 700, "heartbeat": now - 100, "shards": [7]}
    register(redis, "node-dead", alive=False, **dead, pages=600)
    redis.hset(KEYS.nodes, "node-garbage", b"\x80not json")
    return {"hosts": len(hosts), "pushed": len(batch)}


def pop(store: FrontierStore, host: str, now: float) -> tuple[Lease, bytes]:
    """Lease a request from *host*'s shard as node-a."""
    order = PopOrder(shard=shard_of(host, SHARDS), node_id="node-a", default_delay=0.0)
    popped = store.pop(order, now)
    assert popped is not None
    return popped


def held_in_redis(redis) -> dict[str, Any]:
    """What status should report, read from Redis key by key."""
    totals = {"queued": 0, "in_flight": 0, "ready": 0, "waiting": 0}
    by_depth: dict[int, int] = {}
    for shard in range(SHARDS):
        keys = KEYS.shard(shard)
        totals["queued"] += int(redis.hget(keys.counters, "queued") or 0)
        totals["in_flight"] += redis.zcard(keys.leases)
        totals["ready"] += redis.zcard(keys.ready)
        totals["waiting"] += redis.zcard(keys.waiting)
        for level, count in redis.hgetall(keys.outstanding).items():
            depth = int(level) // 16
            by_depth[depth] = by_depth.get(depth, 0) + int(count)
    return totals | {"by_depth": by_depth}


def depth_table(stdout: str) -> dict[int, int]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["depth"])
    rows = {}
    for line in lines[start + 1 :]:
        if not re.fullmatch(r"\s*\d+\s+\d+", line):
            break
        depth, count = line.split()
        rows[int(depth)] = int(count)
    return rows


# --- status ------------------------------------------------------------------------


def report(result: subprocess.CompletedProcess[str], redis_url: str) -> str:
    """`status`'s report after its first line, which names the crawl and the Redis
    it read (here, the one the settings name)."""
    first, _, rest = result.stdout.partition("\n")
    assert first == f"Crawl 'bfs' in Redis {redis_url} (named by the settings)", (
        result.stdout
    )
    return rest


def test_status_reports_what_redis_holds(redis, redis_url, crawl_state):
    result = frontier(redis_url, "status")
    assert result.returncode == 0, result.stderr
    held = held_in_redis(redis)
    # The known numbers: 2 requests popped, one of them acked.
    assert held["queued"] == crawl_state["pushed"] - 2
    assert held["in_flight"] == 1
    assert held["waiting"] == 1
    assert held["ready"] == crawl_state["hosts"] - 2  # one busy, one waiting
    assert held["by_depth"] == {0: crawl_state["hosts"] - 1, 1: 12, 2: 6}
    out = report(result, redis_url)
    assert out.startswith("Crawl 'bfs': running, 8 shards\n")
    assert (
        f"Queued {held['queued']}, in flight {held['in_flight']}; hosts ready "
        f"{held['ready']}, waiting {held['waiting']}; seeds not yet taken 0\n"
    ) in out
    assert depth_table(out) == held["by_depth"]
    assert "Nodes: 1 alive, 2 dead\n" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    node_a, node_dead = rows["node-a"], rows["node-dead"]
    assert node_a[0] == "alive"
    assert re.fullmatch(r"[2-9]s|[1-5][0-9]s", node_a[1])  # the command takes time
    # Then weight, load and state: "-" in an entry of a node before issue 24's fields.
    assert node_a[2:] == ["ago", "0-5", "240", "90.0", "-", "-", "-"]
    assert node_dead[0] == "dead"
    assert re.fullmatch(r"1m[4-5][0-9]s", node_dead[1])
    assert node_dead[3:6] == ["7", "600", "60.0"]  # 600 pages in 10 minutes
    assert rows["node-garbage"] == ["dead", "?", "-", "?", "?", "-", "-", "-"]
    assert "Shards without a live owner: 6-7\n" in out
    assert "Run-time settings: none\n" in out


def test_status_of_a_crawl_that_never_ran(redis, redis_url):
    redis.set("other:meta", "another crawl's")
    result = frontier(redis_url, "status")
    assert result.returncode == 1
    assert report(result, redis_url) == "Crawl 'bfs': no such crawl (no key bfs:meta)\n"


def test_status_shows_pause_settings_and_seeds(redis, redis_url):
    redis.hset(KEYS.meta, "schema_version", "2")
    redis.hset(KEYS.control, mapping={"paused": "1", "set:DEPTH_LIMIT": "3"})
    redis.hset(KEYS.control, "set:FRONTIER_SHARDS", "2")  # not a run-time setting
    redis.rpush(KEYS.seeds, "http://a.example/", "http://b.example/")
    result = frontier(redis_url, "status")
    assert result.returncode == 0, result.stderr
    lines = report(result, redis_url).splitlines()
    assert lines[0] == "Crawl 'bfs': paused, 8 shards"
    assert lines[1].startswith("Progress: ")  # the progress line leads (issue 22)
    assert "seeds not yet taken 2" in lines[3]
    assert "Run-time settings: DEPTH_LIMIT=3" in lines
    assert "Control fields ignored (not this crawler's): set:FRONTIER_SHARDS" in lines


def test_status_of_a_crawl_left_with_work_and_no_node(redis, redis_url, crawl_state):
    redis.delete(KEYS.heartbeat("node-a"))  # killed: its entry stays, dead
    result = frontier(redis_url, "status")
    assert result.returncode == 0, result.stderr
    assert report(result, redis_url).startswith("Crawl 'bfs': stopped, 8 shards\n")


@deferred_f_from_coro_f
async def test_status_of_a_finished_crawl(redis_url, site, settings):
    crawler = get_crawler(BfsSpider, settings(DEPTH_LIMIT=1))
    await crawler.crawl_async(seeds=site.seeds[0])
    fetched = len(site.pages())
    assert fetched > 1
    result = frontier(redis_url, "status")
    assert result.returncode == 0, result.stderr
    lines = report(result, redis_url).splitlines()
    assert lines[0] == "Crawl 'bfs': finished, 8 shards"
    assert (
        "Queued 0, in flight 0; hosts ready 0, waiting 0; seeds not yet taken 0"
        in lines
    )
    # "Done N (not counted by fate)" until the nodes keep fate counters.
    assert any(re.match(rf"Done {fetched}\b", line) for line in lines), lines


def test_status_says_when_the_nodes_kept_no_fate_counters(redis, redis_url):
    redis.hset(KEYS.meta, "schema_version", "2")
    redis.hset(KEYS.shard(3).counters, mapping={"acked": 7, "queued": 0})
    lines = frontier(redis_url, "status").stdout.splitlines()
    assert "Done 7 (not counted by fate); held 0" in lines


def test_status_sums_the_fate_counters_of_every_shard(redis, redis_url):
    redis.hset(KEYS.meta, "schema_version", "2")
    per_shard = [
        {"acked": 5, "fate:fetched": 3, "fate:http_error": 1, "fate:timed_out": 1},
        {"acked": 4, "fate:fetched": 2, "fate:redirected": 1, "fate:http_error": 1,
         "held": 2},
        {"acked": 1, "fate:robots_unreachable": 1, "held": 1, "fate:bogus": 9},
        {"held": "not a number", "fate:network_error": "x"},
    ]  # fmt: skip
    for shard, counters in enumerate(per_shard):
        redis.hset(KEYS.shard(shard).counters, mapping=counters)
    result = frontier(redis_url, "status")
    assert result.returncode == 0, result.stderr
    lines = report(result, redis_url).splitlines()
    assert lines[0] == "Crawl 'bfs': stopped, 8 shards"  # 3 held, no node alive
    assert (
        "Done 10: fetched 5, redirected 1; failed 4 (http_error 2, timed_out 1, "
        "robots_unreachable 1); held 3"
    ) in lines


def status_line(redis_url: str) -> str:
    return report(frontier(redis_url, "status"), redis_url).partition("\n")[0]


def test_status_follows_a_real_crawl_from_running_to_finished(redis_url, tmp_path):
    """A crawl in its own process: running, paused while paused, then finished."""
    with running_site(hosts=1, pages=12, links=0) as site:
        options = {
            "REDIS_URL": redis_url,
            "FRONTIER_SHARDS": SHARDS,
            "FRONTIER_MAINTENANCE_INTERVAL": 0.2,
            "POLITENESS_DAY_DELAY": 0.5,
            "POLITENESS_NIGHT_DELAY": 0.5,
            "POLITENESS_JITTER": 0,
            "ROBOTSTXT_OBEY": False,
            "RECORDS_DATABASE_URL": "",
            "PAGESTORE_URL": "",
            "TELNETCONSOLE_ENABLED": False,
        }
        settings = [w for k, v in options.items() for w in ("-s", f"{k}={v}")]
        crawl = subprocess.Popen(
            [sys.executable, "-m", "scrapy", "crawl", "bfs", *settings,
             "-a", f"seeds={site.seeds[0]}"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            assert wait_for(lambda: "running" in status_line(redis_url), 60)
            assert frontier(redis_url, "pause").returncode == 0
            assert status_line(redis_url) == "Crawl 'bfs': paused, 8 shards"
            assert frontier(redis_url, "resume").returncode == 0
            assert crawl.wait(120) == 0
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.wait()
        fetched = len(site.pages())
    assert fetched == 12
    result = frontier(redis_url, "status")
    assert report(result, redis_url).startswith("Crawl 'bfs': finished, 8 shards\n")
    assert re.search(rf"^Done {fetched}\b", result.stdout, re.MULTILINE)


# --- seed --------------------------------------------------------------------------


def test_seed_pushes_valid_urls_and_reports_bad_ones(redis, redis_url):
    result = frontier(
        redis_url, "seed", "http://a.example/", "https://b.example/x", "ftp://c/", "?"
    )
    assert result.returncode == 0, result.stderr
    assert redis.lrange(KEYS.seeds, 0, -1) == [
        b"http://a.example/",
        b"https://b.example/x",
    ]
    assert result.stdout.startswith("Pushed 2 seeds to 'bfs:seeds', skipped 2")
    errors = result.stderr.splitlines()
    assert len(errors) == 2
    assert errors[0].startswith("scrapy frontier: argument 3: 'ftp://c/'")
    assert errors[1].startswith("scrapy frontier: argument 4: '?'")


def test_seed_from_a_file_names_bad_lines(redis, redis_url, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(
        b"# seeds\n\nhttp://a.example/\nnot a url\r\nhttp://\xff.example/\n"
        b"  https://b.example/p?q=1  \nhttp:///nohost\n"
    )
    result = frontier(redis_url, "seed", "--file", str(seeds))
    assert result.returncode == 0, result.stderr
    assert redis.lrange(KEYS.seeds, 0, -1) == [
        b"http://a.example/",
        b"https://b.example/p?q=1",
    ]
    lines = [line.split(": ")[1] for line in result.stderr.splitlines()]
    assert lines == [f"{seeds} line {n}" for n in (4, 5, 7)]


def test_seed_from_stdin_and_nothing_pushed_is_an_error(redis, redis_url):
    result = frontier(redis_url, "seed", "--file", "-", stdin="http://a.example/\n")
    assert result.returncode == 0, result.stderr
    assert redis.lrange(KEYS.seeds, 0, -1) == [b"http://a.example/"]
    nothing = frontier(redis_url, "seed", "--file", "-", stdin="mailto:x@y\n")
    assert nothing.returncode == 1
    assert "stdin line 1" in nothing.stderr
    assert redis.llen(KEYS.seeds) == 1


def test_seed_from_a_missing_file_says_so(redis_url, tmp_path):
    result = frontier(redis_url, "seed", "--file", str(tmp_path / "none.txt"))
    one_line_error(result, "none.txt")


@deferred_f_from_coro_f
async def test_a_crawl_started_later_takes_the_seeds(
    redis_url, site, settings: Callable[..., dict[str, Any]]
):
    result = frontier(redis_url, "seed", site.seeds[1])
    assert result.returncode == 0, result.stderr
    crawler = get_crawler(BfsSpider, settings(DEPTH_LIMIT=0))
    await crawler.crawl_async()
    first = site.pages()[0]
    assert (first["host"], first["path"]) == (site.host(1), "/")


# --- pause, resume, set ------------------------------------------------------------


def test_pause_and_resume_set_and_delete_the_flag(redis, redis_url):
    assert frontier(redis_url, "pause").returncode == 0
    assert redis.hget(KEYS.control, "paused") == b"1"
    resumed = frontier(redis_url, "resume")
    assert resumed.returncode == 0
    assert "resumed" in resumed.stdout
    assert not redis.hexists(KEYS.control, "paused")
    again = frontier(redis_url, "resume")
    assert again.returncode == 0
    assert "was not paused" in again.stdout


@pytest.mark.parametrize(
    ("args", "field", "value"),
    [
        (["POLITENESS_DAY_DELAY", "2"], "set:POLITENESS_DAY_DELAY", b"2"),
        (["depth_limit", "3"], "set:DEPTH_LIMIT", b"3"),
        (
            ["POLITENESS_OVERRIDES", '{"slow.example": 30}'],
            "set:POLITENESS_OVERRIDES",
            b'{"slow.example": 30}',
        ),
    ],
)
def test_set_writes_a_checked_value(redis, redis_url, args, field, value):
    result = frontier(redis_url, "set", *args)
    assert result.returncode == 0, result.stderr
    assert redis.hgetall(KEYS.control) == {field.encode(): value}


@pytest.mark.parametrize(
    "args",
    [
        ["FRONTIER_SHARDS", "4"],
        ["POLITENESS_DAY_DELAY", "abc"],
        ["DEPTH_LIMIT", "-1"],
        ["POLITENESS_DAY_HOURS", "25:00-26:00"],
        ["POLITENESS_TIMEZONES", '{"de": "Nowhere/Land"}'],
    ],
)
def test_set_refuses_unknown_settings_and_bad_values(redis, redis_url, args):
    one_line_error(frontier(redis_url, "set", *args), args[0])
    assert not redis.exists(KEYS.control)


def test_set_unset_drops_a_value(redis, redis_url):
    # DOWNLOAD_DELAY is Scrapy's name of POLITENESS_MIN_DELAY (the add-on moves it)
    redis.hset(KEYS.control, mapping={"set:POLITENESS_MIN_DELAY": "2", "paused": "1"})
    result = frontier(redis_url, "set", "DOWNLOAD_DELAY", "--unset")
    assert result.returncode == 0, result.stderr
    assert redis.hgetall(KEYS.control) == {b"paused": b"1"}


def test_set_says_when_a_value_in_force_is_bad(redis, redis_url):
    redis.hset(KEYS.control, "set:POLITENESS_JITTER", "-3")  # written by hand
    result = frontier(redis_url, "set", "DEPTH_LIMIT", "4")
    one_line_error(result, "POLITENESS_JITTER", "--unset")
    assert not redis.hexists(KEYS.control, "set:DEPTH_LIMIT")


@pytest.mark.parametrize(
    "args",
    [
        ["set", "DEPTH_LIMIT"],
        ["set", "DEPTH_LIMIT", "3", "4"],
        ["seed"],
        ["pause", "bfs", "x"],
        ["status", "bfs", "--prefix", "bfs"],
    ],
)
def test_usage_errors(redis_url, args):
    assert frontier(redis_url, *args).returncode == 2


# --- the crawl of a spider ------------------------------------------------------------


def test_the_crawl_is_found_by_its_spiders_name(redis, redis_url):
    pushed = frontier(redis_url, "seed", "bfs", "https://a.example/")
    assert pushed.returncode == 0, pushed
    assert redis.lrange(KEYS.seeds, 0, -1) == [b"https://a.example/"]
    assert frontier(redis_url, "set", "bfs", "DEPTH_LIMIT", "3").returncode == 0
    assert redis.hget(KEYS.control, "set:DEPTH_LIMIT") == b"3"
    # The project's only spider is meant when none is named.
    assert frontier(redis_url, "pause").returncode == 0
    assert frontier(redis_url, "resume", "bfs").returncode == 0
    assert not redis.hexists(KEYS.control, "paused")


def test_the_spiders_crawl_takes_its_key_prefix_from_the_settings(redis, redis_url):
    prefix = ["-s", "FRONTIER_KEY_PREFIX=other"]
    assert (
        frontier(redis_url, "seed", "bfs", "https://a.example/", *prefix).returncode
        == 0
    )
    assert redis.llen("other:seeds") == 1
    assert not redis.exists(KEYS.seeds)


def test_an_unknown_spider_is_one_line(redis, redis_url):
    one_line_error(
        frontier(redis_url, "status", "nope"), "unknown spider 'nope'", "bfs"
    )
    assert not redis.keys("*")


# --- reset -------------------------------------------------------------------------


def test_reset_asks_and_deletes_only_this_crawl(redis, redis_url, crawl_state):
    redis.delete(KEYS.heartbeat("node-a"))  # every node stopped
    redis.set("other:meta", "kept")
    count = len(list(redis.scan_iter(match="bfs:*")))
    declined = frontier(redis_url, "reset", stdin="n\n")
    assert declined.stdout == f"Delete crawl 'bfs' ({count} keys)? [y/N] "
    one_line_error(declined, "not confirmed")
    assert len(list(redis.scan_iter(match="bfs:*"))) == count
    accepted = frontier(redis_url, "reset", stdin="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.endswith(f"Deleted {count} keys of crawl 'bfs'\n")
    assert list(redis.scan_iter()) == [b"other:meta"]


def test_reset_refuses_while_a_node_lives_unless_forced(redis, redis_url, crawl_state):
    count = len(list(redis.scan_iter(match="bfs:*")))
    one_line_error(frontier(redis_url, "reset", "--yes"), "alive", "--force")
    assert len(list(redis.scan_iter(match="bfs:*"))) == count
    forced = frontier(redis_url, "reset", "--yes", "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout == f"Deleted {count} keys of crawl 'bfs'\n"
    assert list(redis.scan_iter()) == []


def test_reset_of_nothing_and_of_a_glob_prefix(redis, redis_url):
    redis.set("bfs:meta", "x")
    empty = frontier(redis_url, "reset", "--prefix", "none")
    assert empty.returncode == 0, empty.stderr
    assert "nothing to delete" in empty.stdout
    one_line_error(frontier(redis_url, "reset", "--yes", "--prefix", "b*"), "glob")
    assert redis.get("bfs:meta") == b"x"
