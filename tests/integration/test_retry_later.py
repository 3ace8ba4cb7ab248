"""Retry-later end to end: a host that is down for a while, and URLs that failed for
good brought back by a rerun of their seeds and by ``scrapy frontier retry``.

The site's request log is the witness: each attempt of each page is in it with its
status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.integration.test_timeouts import crawl
from tests.integration.test_traffic import frontier, redis_url
from tests.servers import running_site

if TYPE_CHECKING:
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

DOWN = 1  # the host that answers 503 for a while


def statuses(site: RunningSite, index: int) -> dict[str, list[int | None]]:
    """Each path of host *index*: the statuses of its attempts, in order."""
    found: dict[str, list[int | None]] = {}
    for row in sorted(site.pages(), key=lambda row: row["t"]):
        if row["host"] == site.host(index):
            found.setdefault(row["path"], []).append(row["status"])
    return found


def quick(settings: Any, **overrides: Any) -> dict[str, Any]:
    """One immediate retry (Scrapy's), then later tries after 1, 2 and 4 s."""
    return settings(**{"RETRY_TIMES": 1, "RETRY_LATER_DELAYS": [1, 2, 4], **overrides})


@deferred_f_from_coro_f
@pytest.mark.parametrize("order", ["bfs", "importance"])
async def test_a_host_down_for_a_while_is_crawled_when_it_is_back(settings, order):
    with running_site(
        hosts=2, pages=4, links=1, cross=0.0, behave={DOWN: "down:3"}
    ) as site:
        crawler = await crawl(quick(settings, FRONTIER_ORDER=order), site.seeds)
        attempts = statuses(site, DOWN)

    assert len(attempts) == 4  # every page of the host, found through its links
    for path, seen in attempts.items():
        assert seen[-1] == 200, f"{path} never fetched: {seen}"
        assert seen.count(200) == 1, f"{path} fetched twice: {seen}"
    assert any(503 in seen for seen in attempts.values())  # it was down at first
    assert crawler.stats.get_value("retry_later/held") >= 1
    assert crawler.stats.get_value("retry_later/gave_up_count/http_error") is None


@deferred_f_from_coro_f
async def test_without_later_tries_a_host_down_for_a_while_is_lost(settings):
    """The control: with no later tries, the host's first page fails for good and
    its links are never found."""
    with running_site(
        hosts=2, pages=4, links=1, cross=0.0, behave={DOWN: "down:3"}
    ) as site:
        await crawl(settings(RETRY_TIMES=1, RETRY_LATER_DELAYS=[]), site.seeds)
        attempts = statuses(site, DOWN)

    assert attempts == {"/": [503, 503]}


@deferred_f_from_coro_f
async def test_a_failed_seed_is_tried_again_by_a_rerun_and_by_retry(settings, redis):
    with running_site(hosts=1, pages=2, links=1, cross=0.0) as site:
        missing = site.seeds[0] + "missing.html"
        seeds = [site.seeds[0], missing]
        values = quick(settings)

        await crawl(values, seeds)  # missing: 404, a final failure
        await crawl(values, seeds)  # a rerun: only the failed seed goes again
        retried = frontier("retry", "--failed", "-s", f"REDIS_URL={redis_url(redis)}")
        await crawl(values, [])  # what retry queued
        attempts = statuses(site, 0)

    assert retried.stdout.startswith(
        "1 failed requests of crawl 'bfs' queued again (Redis redis://"
    ), retried.stderr
    assert attempts["/missing.html"] == [404, 404, 404]
    assert attempts["/"] == [200]  # fetched once: a seed that worked is not revived


@deferred_f_from_coro_f
async def test_a_host_whose_robots_txt_fails_twice_is_crawled_once_it_answers(settings):
    """robots.txt answers 503 twice, then a file: the host's URLs wait for the next
    robots.txt attempt instead of being dropped, and the file is obeyed."""
    robots = {DOWN: "fail:2;disallow:/p/4.html"}
    with running_site(hosts=2, pages=5, links=1, cross=0.0, robots=robots) as site:
        values = quick(
            settings,
            ROBOTSTXT_OBEY=True,
            ROBOTS_ERROR_RETRY_DELAY=1,
            RETRY_LATER_DELAYS=[1, 1, 1, 1],
        )
        crawler = await crawl(values, site.seeds)
        attempts = statuses(site, DOWN)
        robots_fetches = site.robots_fetches()[site.host(DOWN)]

    assert robots_fetches == 3
    assert set(attempts) == {"/", "/p/1.html", "/p/2.html", "/p/3.html"}
    assert all(seen == [200] for seen in attempts.values())  # each fetched once
    assert crawler.stats.get_value("retry_later/held_count/robots_unreachable") >= 1
