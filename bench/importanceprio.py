"""The omniscient order of the importance benchmark: Request.priority by true PageRank.

A spider middleware (``BENCH_PAGERANK_FILE`` names a JSON object {URL: PageRank})
gives each request the spider yields a priority from its URL's PageRank rank, so
that with ``FRONTIER_ORDER = priority`` the frontier fetches the discovered URLs
in true PageRank order, under the same politeness. The frontier has
``PRIORITY_BANDS`` priorities (``crawler.policy.order``): ranks are cut into that
many equal slices, the best slice at ``MAX_PRIORITY``; within a slice, first
queued goes first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request

from crawler.policy.order import MAX_PRIORITY, PRIORITY_BANDS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response


def priorities(rank: Mapping[str, float]) -> dict[str, int]:
    """Each URL's priority: its PageRank rank cut into ``PRIORITY_BANDS`` slices."""
    ordered = sorted(rank, key=lambda url: (-rank[url], url))
    size = max(1, -(-len(ordered) // PRIORITY_BANDS))  # ceiling
    return {url: MAX_PRIORITY - index // size for index, url in enumerate(ordered)}


class PageRankPriority:
    """Spider middleware: every request yielded gets its URL's PageRank priority."""

    def __init__(self, table: dict[str, int]) -> None:
        self.table = table
        self.lowest = min(table.values(), default=0)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        path = crawler.settings.get("BENCH_PAGERANK_FILE")
        if not path:
            raise ValueError("BENCH_PAGERANK_FILE: the PageRank table is needed")
        return cls(priorities(json.loads(Path(path).read_text())))

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for output in result:
            if isinstance(output, Request):
                output.priority = self.table.get(output.url, self.lowest)
            yield output
