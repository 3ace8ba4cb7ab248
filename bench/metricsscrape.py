"""The ``frontier+metrics`` crawl's scraper: GET /metrics every second while the
crawl runs, as a Prometheus server would (most scrape every 15 s or more)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

# Where the crawl serves its metrics: a loopback address of the metrics tests' range.
HOST = "127.0.0.27"
INTERVAL = 1.0
TIMEOUT = 5.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@dataclass
class Scrapes:
    """What the scraper got: answers, failures (before the endpoint is up, after
    it stops), and the seconds the answers took."""

    answered: int = 0
    failed: int = 0
    seconds: list[float] = field(default_factory=list)


@contextlib.contextmanager
def scraping(port: int, interval: float = INTERVAL) -> Iterator[Scrapes]:
    """Scrape http://HOST:port/metrics every *interval* s until the block ends."""
    scrapes, done = Scrapes(), threading.Event()

    def run() -> None:
        while not done.wait(interval):
            started = time.monotonic()
            try:
                url = f"http://{HOST}:{port}/metrics"
                with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                    response.read()
            except OSError:
                scrapes.failed += 1
                continue
            scrapes.answered += 1
            scrapes.seconds.append(time.monotonic() - started)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield scrapes
    finally:
        done.set()
        thread.join(TIMEOUT + interval)
