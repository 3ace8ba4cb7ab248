"""When a leased request is done, so the frontier can release its lease.

A request is done when Scrapy's engine is through with it: its download, its
callback or errback, and every item it produced through every pipeline (the records
pipeline returns only once the page's row is committed). Scrapy's engine keeps a
request among those in progress (``enginehooks.requests_in_progress``) exactly that
long, whether the download succeeded, failed in the handler, or raised in a
downloader middleware's ``process_response`` (a redirect to ``mailto:``, which no
``process_exception`` sees).
So the gate tracks each request the scheduler hands out and acknowledges it once
the engine no longer holds it: a node killed before then loses nothing (the lease
expires and the page is fetched again); every request, however it ends, is released.

The host's politeness delay still counts from the end of the download (Scrapy's
``request_left_downloader``), not from the ack: waiting for the record costs no
throughput. A rendered page's counts from the arrival of its main document
(``meta.RENDER_DOCUMENT_AT``): the browser's work on the page after that asks the
host for nothing but the page's own subrequests, and the host still serves one page
at a time (its lease is held until the render is done).

The engine adds a request to ``inprogress`` in the same call that takes it from the
scheduler, so a request tracked before a sweep is in the set or done. Sweeps run when
the scheduler is asked for work (the engine asks right after a request is done) and
on a short timer (the engine does not ask while its downloader is full). A request
replaced meanwhile (retried, redirected, escalated) was released when its successor
was queued; the scheduler's callback ignores it then.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.utils.asyncio import create_looping_call

from crawler.context.enginehooks import requests_in_progress
from crawler.meta import RENDER_DOCUMENT_AT

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

# Seconds between two sweeps of the timer (the engine's own asks come first).
SWEEP_INTERVAL = 0.1


class AckGate:
    """Calls *on_done* with each tracked request once the engine is through with it."""

    def __init__(
        self, crawler: Crawler, on_done: Callable[[Request, float | None], None]
    ) -> None:
        self._crawler = crawler
        self._on_done = on_done
        # id -> request: Request objects compare by identity, as the engine's set does.
        self._tracked: dict[int, Request] = {}
        # id -> when its download ended, for tracked requests that reached it.
        self._left_at: dict[int, float] = {}
        self._timer: AsyncioLoopingCall | LoopingCall | None = None
        crawler.signals.connect(self._left, signal=signals.request_left_downloader)

    def __len__(self) -> int:
        return len(self._tracked)

    def track(self, request: Request) -> None:
        """Watch *request*, just handed to the engine."""
        self._tracked[id(request)] = request
        if self._timer is None:
            self._timer = create_looping_call(self.sweep)
            self._timer.start(SWEEP_INTERVAL, now=False)

    def _left(self, request: Request) -> None:
        if id(request) in self._tracked:
            # A rendered page's delay counts from its document's arrival.
            document_at = request.meta.get(RENDER_DOCUMENT_AT)
            self._left_at[id(request)] = (
                document_at if isinstance(document_at, float) else time.time()
            )

    def sweep(self) -> None:
        """Report every tracked request the engine no longer holds."""
        if not self._tracked:
            return
        # The module docstring says why this set is the right one.
        in_progress = requests_in_progress(self._crawler)
        if in_progress is None:
            return
        done = [r for r in self._tracked.values() if r not in in_progress]
        for request in done:
            del self._tracked[id(request)]
            self._on_done(request, self._left_at.pop(id(request), None))

    def stop(self) -> None:
        """A last sweep, then no timer: done requests are acked before close."""
        if self._timer is not None and self._timer.running:
            self._timer.stop()
        self._timer = None
        self.sweep()
        self._tracked.clear()
        self._left_at.clear()
