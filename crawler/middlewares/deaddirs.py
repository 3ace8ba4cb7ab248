"""DeadDirectoriesMiddleware: a host's directory whose pages fetched so far were all
missing is not asked for more (``crawler.policy.deaddirs``).

Each page's answer is counted as it comes back (after ``Soft404Middleware`` has
turned a soft 404 into the 404 it is); a queued page of a dead directory ends with
fate ``trap`` (its error ``DeadDirectory: ...``, ``traps/dead_directory``, one of its
host's ``traps``) before the server gate, so it costs no fetch and no politeness
delay. Seeds, robots.txt and the soft-404 probes are neither counted nor refused,
and a revisit is counted but never refused: a page found before is asked again.
Each node counts the pages it fetched (a host's pages are mostly fetched by the node
that owns its shard).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured

from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure
from crawler.meta import REVISIT, is_page_fetch
from crawler.policy.deaddirs import DeadDirectories, directory_of
from crawler.policy.traps import TrapsConfig
from crawler.signals import trap_cut

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class DeadDirectory(IgnoreRequest):
    """The request's directory has had only missing pages."""


class DeadDirectoriesMiddleware:
    def __init__(self, crawler: Crawler, pages: int) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._dead = DeadDirectories(pages)
        self._once = OnceLogger(logger, crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            config = TrapsConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        if not config.dead_directory_pages:
            raise NotConfigured
        return cls(crawler, config.dead_directory_pages)

    def process_request(self, request: Request) -> None:
        meta = request.meta
        if not is_page_fetch(meta) or not meta.get("depth") or meta.get(REVISIT):
            return
        if not self._dead.is_dead(request.url):
            return
        self._stats.inc_value("traps/dead_directory")
        self._crawler.signals.send_catch_log(
            trap_cut, url=request.url, rule="dead_directory"
        )
        raise DeadDirectory(f"only missing pages in {directory_of(request.url)}")

    def process_response(self, request: Request, response: Response) -> Response:
        if is_page_fetch(request.meta) and self._dead.record(
            request.url, response.status
        ):
            self._once.event(
                "traps/dead_directories",
                "%(directory)s had %(pages)d missing pages and none found: its "
                "other pages are not fetched; further such directories are counted "
                "in traps/dead_directories",
                {"directory": directory_of(request.url), "pages": self._dead.pages},
                level=logging.INFO,
            )
        return response
