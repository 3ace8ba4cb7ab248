"""Subprocesses of the benchmark: the test site, and crawls measured while they run.

A crawl's CPU time comes from ``getrusage(RUSAGE_CHILDREN)`` deltas around its
``wait()`` (exact, whole process); its peak RSS from psutil samples every 0.1 s.
"""

from __future__ import annotations

import contextlib
import json
import resource
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import psutil
import redis

from crawler.crawlstate.embedded import EmbeddedRedis

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from bench.crawls import Command

SAMPLE_INTERVAL = 0.1
STOP_TIMEOUT = 10.0
SITE_START_TIMEOUT = 20.0


@dataclass(frozen=True)
class Site:
    """A running test site: its process, port and seed URLs."""

    process: subprocess.Popen[str]
    port: int
    seeds: list[str]


@dataclass(frozen=True)
class ProcessResult:
    """How a crawl process ran: exit status, wall time, CPU time, peak RSS."""

    returncode: int | None
    timed_out: bool
    wall_seconds: float
    cpu_seconds: float
    peak_rss_bytes: int


@dataclass(frozen=True)
class SiteShape:
    """The test site's size: hosts, pages a host, links a page, share of cross links."""

    hosts: int
    pages: int
    links: int
    cross: float


@contextlib.contextmanager
def running_site(
    root: Path, shape: SiteShape, log: Path | None = None, extra: Sequence[str] = ()
) -> Iterator[Site]:
    """``python -m tests.site`` until the block ends; a request log only if asked;
    *extra* arguments (``--robots``, ``--behave``...) as given."""
    argv = [
        sys.executable, "-m", "tests.site", "--hosts", str(shape.hosts),
        "--pages", str(shape.pages), "--links", str(shape.links),
        "--cross", str(shape.cross),
    ]  # fmt: skip
    if log is not None:
        argv += ["--log", str(log)]
    argv += extra
    process = subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        info = json.loads(_read_line(process.stdout, SITE_START_TIMEOUT))
        yield Site(process, int(info["port"]), list(info["seeds"]))
    finally:
        stop(process)
        if process.stdout is not None:
            process.stdout.close()


def _read_line(stream: IO[str], timeout: float) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise TimeoutError(f"the test site did not start in {timeout:.0f} s")
    line = stream.readline()
    if not line:
        raise RuntimeError("the test site exited before announcing its port")
    return line


def stop(process: subprocess.Popen[Any]) -> None:
    """Terminate *process* (then kill it) and reap it, bounded in time."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)


def run_measured(command: Command, log_path: Path, timeout: float) -> ProcessResult:
    """Run *command* to its end (at most *timeout* s), output to *log_path*."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command.argv,
            cwd=command.cwd,
            env=command.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            peak, timed_out = _watch(process, started + timeout)
        finally:  # Ctrl-C or an error here must not leave the crawl running
            stop(process)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ProcessResult(process.returncode, timed_out, wall, cpu, peak)


def _watch(process: subprocess.Popen[bytes], deadline: float) -> tuple[int, bool]:
    """Sample the RSS of *process* until it exits or *deadline*; (peak, timed out)."""
    peak = 0
    try:
        watched = psutil.Process(process.pid)
    except psutil.Error:
        watched = None
    while process.poll() is None:
        if time.monotonic() >= deadline:
            return peak, True
        if watched is not None:
            with contextlib.suppress(psutil.Error):
                peak = max(peak, watched.memory_info().rss)
        time.sleep(SAMPLE_INTERVAL)
    return peak, False


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of a running process so far (0 if it is gone)."""
    if pid is None:
        return 0.0
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return float(times.user + times.system)


@dataclass(frozen=True)
class Lab:
    """A benchmark's private redis-server, a client of it, and the running site."""

    server: EmbeddedRedis
    client: redis.Redis
    site: Site
    log: Path | None


@contextlib.contextmanager
def lab(root: Path, shape: SiteShape, *, log: bool = False) -> Iterator[Lab]:
    """A private redis-server (no persistence) and the site, with the site's request
    log in the same temporary directory if *log*, until the block ends."""
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        log_path = Path(tmp) / "requests.jsonl" if log else None
        try:
            with running_site(root, shape, log_path) as site:
                yield Lab(server, client, site, log_path)
        finally:
            client.close()
            server.stop()
