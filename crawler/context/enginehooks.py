"""The only place the frontier touches Scrapy's engine past its public API.

Scrapy 2.19 has no public way to do either thing the frontier needs from its engine:

- **wake it early.** The engine asks the scheduler for work when a request ends and
  on its own 5 s heartbeat. A host whose politeness delay ends, a shard taken over,
  or seeds pushed by another client make work ready between two asks; without a
  wake-up the node would idle up to the heartbeat. ``engine._slot.nextcall`` is the
  engine's own "run a loop soon" call (``ExecutionEngine.crawl`` schedules it too).
- **see the requests in progress.** A lease is released when the engine is through
  with its request: download, callback, and every item through every pipeline.
  ``engine._slot.inprogress`` holds a request exactly that long, however it ends
  (see ``ackgate``); no signal covers every ending (a redirect to ``mailto:``
  refused in a ``process_response`` sends none).
- **know whether it is closing** (``engine._slot.closing``), for components that
  must not start work then.
- **reach its scheduler** (``engine._slot.scheduler``), for a component that asks
  the frontier something (which hosts are due soon: ``crawler.dns.ahead``).

Each helper answers safely when the engine or its slot is gone (before open, after
close). When Scrapy grows a public API for any of these, only this module changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection

    from scrapy import Request
    from scrapy.crawler import Crawler


def wake_engine(crawler: Crawler) -> None:
    """Ask the engine for a new loop soon (it will ask the scheduler for work)."""
    engine = crawler.engine
    if engine is not None and engine._slot is not None:
        engine._slot.nextcall.schedule()


def requests_in_progress(crawler: Crawler) -> Collection[Request] | None:
    """The requests the engine still holds (None before open or after close)."""
    engine = crawler.engine
    slot = engine._slot if engine is not None else None
    return None if slot is None else slot.inprogress


def engine_closing(crawler: Crawler) -> bool:
    """Whether the engine is closing the spider, or has no spider open."""
    engine = crawler.engine
    slot = engine._slot if engine is not None else None
    return slot is None or slot.closing is not None


def engine_scheduler(crawler: Crawler) -> object | None:
    """The scheduler of the open engine (None before open or after close)."""
    engine = crawler.engine
    slot = engine._slot if engine is not None else None
    return None if slot is None else slot.scheduler
