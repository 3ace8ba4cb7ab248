"""Duplicates as Scrapy's scheduler contract has them: logged, and dropped loudly.

A duplicate found in the local seen cache makes ``enqueue_request`` return False
(Scrapy's engine then sends ``request_dropped``). One found by Redis when the push
buffer is flushed later, outside that call, gets ``request_dropped`` from here. Each
is logged as Scrapy's ``RFPDupeFilter`` logs it: the first one only, saying no more
will be shown, or every one with ``DUPEFILTER_DEBUG``. (``dupefilter/filtered`` is
counted in bulk by ``Admission.count_duplicates``.)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.utils.request import referer_str

from crawler.context.logonce import OnceLogger

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class DuplicateLog:
    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._debug = crawler.settings.getbool("DUPEFILTER_DEBUG")
        self._once = OnceLogger(logger, crawler)

    def found(self, request: Request) -> None:
        """Log *request* as a filtered duplicate, as RFPDupeFilter does."""
        spider = self._crawler.spider
        if self._debug:
            logger.debug(
                "Filtered duplicate request: %(request)s (referer: %(referer)s)",
                {"request": request, "referer": referer_str(request)},
                extra={"spider": spider},
            )
        else:
            self._once.once(
                "duplicate",
                "Filtered duplicate request: %(request)s - no more duplicates will be "
                "shown (see DUPEFILTER_DEBUG to show all duplicates)",
                {"request": request},
                level=logging.DEBUG,
            )

    def dropped(self, request: Request) -> None:
        """A duplicate Redis found after ``enqueue_request`` returned: log it and
        send ``request_dropped`` for it, as the engine does for a refused one."""
        self.found(request)
        self._crawler.signals.send_catch_log(
            signal=signals.request_dropped,
            request=request,
            spider=self._crawler.spider,
        )
