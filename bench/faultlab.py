"""The fault benchmark's stage: a Redis that can be stopped and restarted, the site,
its request log read as it grows, and crawl processes that can be killed.

Every process started here is started in its own session (a Ctrl-C reaches only the
benchmark, which then stops them itself) and asks Linux to kill it if the benchmark
dies; ``stage()`` stops every one of them when its block ends, however it ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from bench import procs
from bench.crawls import ROOT
from tests.servers import RestartableRedis

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

REDIS_START_TIMEOUT = 15.0
POLL = 0.1
_PR_SET_PDEATHSIG = 1


def _die_with_parent(sig: int) -> Callable[[], None]:
    """A preexec_fn: Linux sends *sig* to the child when the benchmark dies."""

    def preexec() -> None:
        if sys.platform.startswith("linux"):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)

    return preexec


class LogTail:
    """The site's request log, read incrementally: only new complete lines each time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []
        self._offset = 0
        self._pages: set[tuple[str, str]] = set()
        self._by_node: Counter[str | None] = Counter()

    def read(self) -> list[dict[str, Any]]:
        """Every row so far (new ones parsed now)."""
        if not self.path.exists():
            return self.rows
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            row = json.loads(line)
            self.rows.append(row)
            if row["status"] == 200 and row["path"] != "/robots.txt":
                self._pages.add((row["host"], row["path"]))
                self._by_node[row["node"]] += 1
        return self.rows

    def pages_fetched(self) -> int:
        """Distinct paths answered 200 (robots.txt left out), so far."""
        self.read()
        return len(self._pages)

    def fetched_by(self, node: str) -> int:
        """Pages answered 200 to requests of *node* (its X-Crawler-Node header)."""
        self.read()
        return self._by_node[node]


@dataclass
class Node:
    """One crawl process: its label (sent as X-Crawler-Node), process and output."""

    label: str
    process: subprocess.Popen[bytes]
    output: IO[bytes]
    started: float = field(default_factory=time.monotonic)
    killed: bool = False
    timed_out: bool = False

    def outcome(self) -> str:
        """How it ended, for the table: exit code, "kill -9" or "stuck"."""
        if self.timed_out:
            return "stuck"
        if self.killed:
            return "kill-9"
        return str(self.process.returncode)


@dataclass
class Stage:
    """One scenario's world: temporary directory, Redis, site and crawl processes."""

    tmp: Path
    redis: RestartableRedis
    site: procs.Site
    tail: LogTail
    logs: Path
    nodes: list[Node] = field(default_factory=list)

    def start_node(self, label: str, argv: list[str]) -> Node:
        """Start a crawl process, its output to ``logs/<label>.log``."""
        self.logs.mkdir(parents=True, exist_ok=True)
        output = (self.logs / f"{label}.log").open("wb")
        process = subprocess.Popen(
            argv,
            cwd=ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent(signal.SIGKILL),  # noqa: PLW1509
        )
        node = Node(label, process, output)
        self.nodes.append(node)
        return node

    def kill(self, node: Node) -> None:
        """kill -9, and reap it."""
        if node.process.poll() is None:
            node.process.kill()
            node.killed = True
        node.process.wait(procs.STOP_TIMEOUT)

    def wait(self, nodes: Sequence[Node], deadline: float) -> None:
        """Until every node has exited or *deadline*; those still running then are
        marked stuck and killed."""
        while any(n.process.poll() is None for n in nodes):
            if time.monotonic() >= deadline:
                for node in nodes:
                    if node.process.poll() is None:
                        node.timed_out = True
                        self.kill(node)
                return
            time.sleep(POLL)

    def stop_all(self) -> None:
        """Kill every node still running and close their outputs (bounded)."""
        for node in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                if node.process.poll() is None:
                    node.process.kill()
                node.process.wait(procs.STOP_TIMEOUT)
            node.output.close()


def errors_logged(nodes: Sequence[Node]) -> dict[str, int]:
    """ERROR lines and tracebacks in the nodes' output, in all."""
    counts = {"error_lines": 0, "tracebacks": 0}
    for node in nodes:
        path = Path(node.output.name)
        if path.exists():
            text = path.read_text("utf-8", errors="replace")
            counts["error_lines"] += text.count("] ERROR: ")
            counts["tracebacks"] += text.count("Traceback (most recent call last)")
    return counts


def wait_until(predicate: Callable[[], bool], timeout: float) -> bool:
    """Poll *predicate* until it holds or *timeout* seconds pass (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(POLL)
    return predicate()


@contextlib.contextmanager
def stage(
    shape: procs.SiteShape, site_args: Sequence[str], logs: Path
) -> Iterator[Stage]:
    """A fresh Redis (AOF) and site in a temporary directory, until the block ends;
    then every crawl process, the site and Redis are stopped, whatever happened."""
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as name:
        tmp = Path(name)
        server = RestartableRedis(tmp / "redis")
        server.start()
        current: Stage | None = None
        try:
            log = tmp / "requests.jsonl"
            with procs.running_site(ROOT, shape, log, site_args) as site:
                current = Stage(tmp, server, site, LogTail(log), logs)
                try:
                    yield current
                finally:
                    current.stop_all()
        finally:
            server.stop()
