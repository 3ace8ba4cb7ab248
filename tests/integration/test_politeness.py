"""Day/night politeness end to end: each host's gaps, measured at the site, follow the
delay in force in the host's own local time (and overrides, the hourly cap, jitter)."""

from __future__ import annotations

import statistics
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.spiders.bfs import BfsSpider
from tests.servers import running_site
from tests.site import host_address

if TYPE_CHECKING:
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

DAY, NIGHT = 0.6, 0.1
# Hours safely inside the day (08:00-22:00) and the night, for a crawl of seconds.
DAY_HOURS, NIGHT_HOURS = range(10, 20), range(1, 6)


def zone_at(hours: range) -> str:
    """A fixed-offset zone whose local hour is now in *hours*."""
    now = time.time()
    for offset in range(-12, 15):
        name = f"Etc/GMT{-offset:+d}" if offset else "Etc/UTC"  # Etc/GMT+5 is UTC-5
        if datetime.fromtimestamp(now, ZoneInfo(name)).hour in hours:
            return name
    raise AssertionError(f"no zone has its hour in {hours} now")


async def crawl(settings: dict[str, Any], site: RunningSite) -> Any:
    crawler = get_crawler(BfsSpider, settings)
    await crawler.crawl_async(seeds=",".join(site.seeds))
    assert crawler.stats.get_value("finish_reason") == "finished"
    return crawler


def gaps_of(site: RunningSite, index: int) -> list[float]:
    gaps = site.gaps_by_host()[f"{host_address(index)}:{site.spec.port}"]
    assert len(gaps) >= 4, "too few fetches of the host to judge its gaps"
    return gaps


@deferred_f_from_coro_f
async def test_each_host_gets_the_delay_of_its_own_local_time(settings):
    zones = {host_address(0): zone_at(DAY_HOURS), host_address(1): zone_at(NIGHT_HOURS)}
    with running_site(hosts=2, pages=7, links=2, cross=0.0) as site:
        await crawl(
            settings(
                POLITENESS_DAY_DELAY=DAY,
                POLITENESS_NIGHT_DELAY=NIGHT,
                POLITENESS_TIMEZONES=zones,
            ),
            site,
        )
        daytime, night = gaps_of(site, 0), gaps_of(site, 1)
    assert min(daytime) >= DAY
    assert min(night) >= NIGHT
    assert statistics.median(night) < DAY  # the night host is not held to the day


@deferred_f_from_coro_f
async def test_a_domain_override_raises_its_hosts_delay(settings):
    with running_site(hosts=2, pages=6, links=2, cross=0.0) as site:
        await crawl(
            settings(
                POLITENESS_DAY_DELAY=NIGHT,
                POLITENESS_NIGHT_DELAY=NIGHT,
                POLITENESS_OVERRIDES={host_address(1): DAY},
            ),
            site,
        )
        plain, overridden = gaps_of(site, 0), gaps_of(site, 1)
    assert min(overridden) >= DAY
    assert statistics.median(plain) < DAY


@deferred_f_from_coro_f
async def test_the_hourly_cap_spaces_a_hosts_fetches(settings):
    per_hour = 7200  # one fetch every 0.5 s at most
    with running_site(hosts=1, pages=6, links=2) as site:
        crawler = await crawl(
            settings(POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR=per_hour), site
        )
        gaps = gaps_of(site, 0)
    assert min(gaps) >= 3600 / per_hour
    assert crawler.stats.get_value("politeness/hourly_cap") > 0


@deferred_f_from_coro_f
async def test_jitter_varies_the_gaps_but_never_goes_below_the_delay(settings):
    delay, jitter = 0.2, 0.5
    with running_site(hosts=1, pages=10, links=2) as site:
        await crawl(
            settings(
                POLITENESS_DAY_DELAY=delay,
                POLITENESS_NIGHT_DELAY=delay,
                POLITENESS_JITTER=jitter,
            ),
            site,
        )
        gaps = gaps_of(site, 0)
    assert min(gaps) >= delay
    # Draws spread over [0.2, 0.3]: nine of them all within 20 ms is a 1-in-10^5 event.
    assert max(gaps) - min(gaps) > 0.02
