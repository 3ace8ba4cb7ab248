"""The crawler processes of ``bench.dispatch``: started with their own settings,
watched through the node table, drained, killed, reaped.

Every node is named (``FRONTIER_NODE_NAME``) after its label, which it also sends
in the ``X-Crawler-Node`` header, so the site's log and the node table name the same
node the same way.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Self

from bench.crawls import FRONTIER_PREFIX, ROOT, CrawlSpec, command
from crawler.crawlstate.keys import CrawlKeys

if TYPE_CHECKING:
    from pathlib import Path

    import redis

    from bench.dispatchmeasure import Sample

SAMPLE_INTERVAL = 0.5
STOP_TIMEOUT = 10.0
DRAIN_COMMAND_TIMEOUT = 60.0
KEYS = CrawlKeys(FRONTIER_PREFIX)


@dataclass
class Node:
    """One crawler process: its label (= node id), process and when it ended."""

    label: str
    concurrency: int
    process: subprocess.Popen[bytes]
    output: IO[bytes]
    stats_file: Path
    started: float
    exited: float | None = None

    def poll(self) -> bool:
        """Whether it has exited (noting when, the first time it is seen so)."""
        if self.process.poll() is not None and self.exited is None:
            self.exited = time.time()
        return self.exited is not None

    def stats(self) -> dict[str, Any]:
        if not self.stats_file.exists():
            return {}
        stats: dict[str, Any] = json.loads(self.stats_file.read_text("utf-8"))
        return stats


@dataclass(frozen=True)
class Launch:
    """What every node of a crawl shares: seeds, Redis, settings, where to write."""

    seeds: str
    redis_url: str
    total: int
    timeout: float
    out: Path
    settings: dict[str, Any] = field(default_factory=dict)


def start(launch: Launch, label: str, concurrency: int, **extra: Any) -> Node:
    """Start one node of the crawl, its output to ``out/logs/dispatch-<label>.log``."""
    stats_file = launch.out / "stats" / f"dispatch-{label}.json"
    stats_file.unlink(missing_ok=True)
    settings = {
        **launch.settings,
        "CONCURRENT_REQUESTS": concurrency,
        "FRONTIER_NODE_NAME": label,
        "DEFAULT_REQUEST_HEADERS": {"X-Crawler-Node": label},
        **extra,
    }
    spec = CrawlSpec(
        launch.seeds, launch.redis_url, launch.total, launch.timeout, stats_file,
        extra=settings, spider_args={"scope": "seed-hosts"},
    )  # fmt: skip
    cmd = command("frontier", spec)
    log_path = launch.out / "logs" / f"dispatch-{label}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    output = log_path.open("wb")
    process = subprocess.Popen(
        cmd.argv, cwd=cmd.cwd, env=cmd.env, stdout=output, stderr=subprocess.STDOUT
    )
    return Node(label, concurrency, process, output, stats_file, time.time())


def wait_all(nodes: list[Node], deadline: float) -> bool:
    """Until every node exited (True) or *deadline* passed (False)."""
    while time.monotonic() < deadline:
        if all(node.poll() for node in nodes):
            return True
        time.sleep(0.1)
    return False


def stop_all(nodes: list[Node]) -> None:
    """Kill what still runs (a node past the timeout) and close the outputs."""
    for node in nodes:
        if node.process.poll() is None:
            node.process.kill()
            node.process.wait(STOP_TIMEOUT)
        node.poll()
        node.output.close()


def kill9(node: Node) -> float:
    """``kill -9`` the node; the time it was killed at."""
    node.process.kill()
    at = time.time()
    node.process.wait(STOP_TIMEOUT)
    node.poll()
    return at


def drain(client: redis.Redis, redis_url: str, node: str) -> dict[str, Any]:
    """``scrapy frontier drain NODE``; if this checkout has no such subcommand, the
    control it writes (``drain:<node>`` = 1 in the control hash), set directly."""
    argv = [
        sys.executable, "-m", "scrapy", "frontier", "drain", node,
        "--prefix", FRONTIER_PREFIX, "-s", f"REDIS_URL={redis_url}",
    ]  # fmt: skip
    at = time.time()
    done = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True,
        timeout=DRAIN_COMMAND_TIMEOUT, check=False,
    )  # fmt: skip
    if done.returncode == 0:
        return {"at": at, "via": "scrapy frontier drain"}
    client.hset(KEYS.control, f"drain:{node}", "1")
    said = (done.stderr.strip().splitlines() or [""])[-1]
    return {"at": at, "via": "control hash", "command_said": said[:200]}


class TableSampler:
    """Reads ``<prefix>:nodes`` every SAMPLE_INTERVAL in a thread until stopped."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._stop = threading.Event()
        self.samples: list[Sample] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(STOP_TIMEOUT)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL):
            with contextlib.suppress(Exception):  # a bad entry: skip the sample
                raw: dict[bytes, bytes] = self._client.hgetall(KEYS.nodes)  # type: ignore[assignment]
                entries = {k.decode(): json.loads(v) for k, v in raw.items()}
                self.samples.append((time.time(), entries))
