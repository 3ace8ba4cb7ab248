"""The fault benchmark's scenarios: the crawl command, and how each scenario runs its
crawls and faults on a stage (``bench/faultlab.py``). See ``bench/faults.py``."""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis

from bench import faultlab

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence


@dataclass(frozen=True)
class Scenario:
    """A named fault: how it runs, the site's extra arguments, nodes and outage."""

    name: str
    run: Callable[[argparse.Namespace, faultlab.Stage, Scenario], dict[str, Any]]
    site_args: tuple[str, ...] = ()
    nodes: int = 1
    outage: float = 0.0


def crawl_argv(
    args: argparse.Namespace, stage: faultlab.Stage, label: str, node: str = ""
) -> list[str]:
    """The crawl command: the same for every run of a node but its label (the
    X-Crawler-Node header the site logs); *node* is its FRONTIER_NODE_NAME (default
    the label), which reruns after a kill keep, as an operator's would."""
    total = args.hosts * args.pages
    settings: dict[str, Any] = {
        "REDIS_URL": stage.redis.url,
        "FRONTIER_NODE_NAME": node or label,
        "FRONTIER_DEDUP_CAPACITY": max(10_000, 10 * total),
        "POLITENESS_DAY_DELAY": args.delay,
        "POLITENESS_NIGHT_DELAY": args.delay,
        "POLITENESS_JITTER": 0,
        "CONCURRENT_REQUESTS": args.concurrency,
        "DEPTH_LIMIT": 0,
        "RECORDS_DATABASE_URL": f"sqlite:///{stage.tmp / 'pages.db'}",
        "PAGESTORE_URL": str(stage.tmp / "pages"),
        "ROBOTS_ERROR_RETRY_DELAY": 2,
        "ROBOTS_FETCH_TIMEOUT": 3,
        "RETRY_LATER_DELAYS": "2,4,8,16",
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "DEFAULT_REQUEST_HEADERS": json.dumps({"X-Crawler-Node": label}),
        "EXTENSIONS": json.dumps({"bench.statsfile.StatsFile": 0}),
        "BENCH_STATS_FILE": str(args.out / "stats" / f"faults-{label}.json"),
    }
    argv = [sys.executable, "-m", "scrapy", "crawl", "bfs"]
    argv += ["-a", f"seeds={','.join(stage.site.seeds)}", "-a", "scope=seed-hosts"]
    for key, value in settings.items():
        argv += ["-s", f"{key}={value}"]
    return argv


def run_outage(
    args: argparse.Namespace, stage: faultlab.Stage, scenario: Scenario
) -> dict[str, Any]:
    """Nodes crawl; Redis stops at a third of the pages, restarts after the outage."""
    labels = [f"{scenario.name}-n{i + 1}" for i in range(scenario.nodes)]
    nodes = [stage.start_node(x, crawl_argv(args, stage, x)) for x in labels]
    third = args.hosts * args.pages // 3

    def third_or_done() -> bool:
        done = all(n.process.poll() is not None for n in nodes)
        return done or stage.tail.pages_fetched() >= third

    faultlab.wait_until(third_or_done, args.timeout)
    at_stop = stage.tail.pages_fetched()
    stage.redis.stop()
    time.sleep(scenario.outage)
    stage.redis.start()
    restarted = time.time()
    keys = _keys(stage.redis.url)
    stage.wait(nodes, time.monotonic() + args.finish_timeout)
    after = [
        row["t"] for row in stage.tail.read()
        if row["t"] > restarted and row["status"] == 200
    ]  # fmt: skip
    return {
        "events": 1,
        "pages_when_redis_stopped": at_stop,
        "keys_after_restart": keys,
        "first_answer_after_restart_s": min(after) - restarted if after else None,
        "note": f"Redis stopped at {at_stop} pages, back with {keys} keys; first "
        + (f"answer {min(after) - restarted:.1f} s after" if after else "none after"),
    }


def _keys(url: str) -> int:
    client = redis.Redis.from_url(url)
    try:
        return int(client.dbsize())
    finally:
        client.close()


def run_kills(
    args: argparse.Namespace, stage: faultlab.Stage, scenario: Scenario
) -> dict[str, Any]:
    """kill -9 one node at a random moment after its first page; rerun; repeat."""
    rng = random.Random(args.seed)
    kills, waits = 0, []
    for run in range(1, args.kills + 1):
        label = f"{scenario.name}-r{run}"
        argv = crawl_argv(args, stage, label, f"{scenario.name}-node")
        node = stage.start_node(label, argv)
        faultlab.wait_until(
            lambda: stage.tail.fetched_by(label) > 0 or node.process.poll() is not None,  # noqa: B023
            args.timeout,
        )
        waits.append(round(time.monotonic() - node.started, 1))
        time.sleep(rng.uniform(0.5, args.kill_after))
        if node.process.poll() is not None:
            break  # the crawl ended before this kill
        stage.kill(node)
        kills += 1
    else:
        label = f"{scenario.name}-r{args.kills + 1}"
        argv = crawl_argv(args, stage, label, f"{scenario.name}-node")
        node = stage.start_node(label, argv)
        stage.wait([node], time.monotonic() + args.timeout)
    return {
        "events": kills,
        "kills": kills,
        "seconds_to_first_page_by_run": waits,
        "note": f"{kills} kills; seconds from start to a run's first page: "
        + ", ".join(f"{w:g}" for w in waits),
    }


def run_plain(
    args: argparse.Namespace, stage: faultlab.Stage, scenario: Scenario
) -> dict[str, Any]:
    """One crawl to its end (bounded); the faults are the site's."""
    label = f"{scenario.name}-n1"
    node = stage.start_node(label, crawl_argv(args, stage, label))
    stage.wait([node], time.monotonic() + args.timeout)
    return {"events": 0, "note": "site: " + " ".join(scenario.site_args)}


def scenarios(window: float) -> list[Scenario]:
    """Every scenario, in the order they run."""
    robots = ("1=fail:3", "2=fail:3,429", "3=fail:2,hang")
    pages = (f"1=busy:{window:g}", f"2=refuse:{window:g}", "3=retry-after:1")
    return [
        Scenario("outage-15s", run_outage, nodes=2, outage=15.0),
        Scenario("outage-60s", run_outage, nodes=2, outage=60.0),
        Scenario("kill-9-x5", run_kills),
        Scenario("flaky-robots", run_plain, _each("--robots", robots)),
        Scenario("flaky-pages", run_plain, _each("--behave", pages)),
    ]


def _each(option: str, values: Sequence[str]) -> tuple[str, ...]:
    return tuple(part for value in values for part in (option, value))
