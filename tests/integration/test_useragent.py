"""Rotating User-Agent and Referer in whole crawls, asserted from the site's log."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

import crawler.defaults as project
from crawler import __version__
from crawler.spiders.bfs import BfsSpider
from tests.site import links_of, page_index, url_of

if TYPE_CHECKING:
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

REFERERS = ["https://www.google.com/", "https://duckduckgo.com/?q=crawler"]
PLACEHOLDER = "https://example.com/crawler-contact"
CONTACT = "https://bots.example.org/who-we-are"


def defaults(bot: str = "crawler", contact: str = PLACEHOLDER) -> set[str]:
    """The project's default User-Agents as a site sees them."""
    return {
        template.replace("{token}", bot)
        .replace("{version}", __version__)
        .replace("{contact}", contact)
        for template in project.USERAGENT_LIST
    }


async def crawl(settings: dict[str, Any], site: RunningSite) -> Any:
    crawler = get_crawler(BfsSpider, settings)
    await crawler.crawl_async(seeds=site.seeds[0])
    assert crawler.stats.get_value("finish_reason") == "finished"
    return crawler


def agents_by_host(site: RunningSite) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for row in site.log():
        found[row["host"]].add(row["ua"])
    return found


def page_of(site: RunningSite, url: str) -> tuple[int, int]:
    """(host index, page index) of a URL of the site."""
    parts = urlsplit(url)
    hosts = {f"127.0.0.{2 + i}:{site.spec.port}": i for i in range(site.spec.hosts)}
    page = page_index(parts.path, site.spec.pages)
    assert parts.netloc in hosts, url
    assert page is not None, url
    return hosts[parts.netloc], page


@deferred_f_from_coro_f
async def test_per_request_mode_sends_many_user_agents(site, settings):
    await crawl(settings(USERAGENT_MODE="per-request"), site)
    agents = [row["ua"] for row in site.pages()]
    assert len(agents) > 100
    assert set(agents) <= defaults()
    assert len(set(agents)) >= 8
    assert all(len(found) > 1 for found in agents_by_host(site).values())


@deferred_f_from_coro_f
async def test_per_host_mode_sends_one_user_agent_per_host(site, settings):
    await crawl(settings(USERAGENT_MODE="per-host", USERAGENT_STICKY_TTL=3600), site)
    by_host = agents_by_host(site)
    assert len(by_host) == site.spec.hosts
    assert len(site.log()) > 20 * len(by_host)  # many requests a host
    for host, found in by_host.items():
        assert len(found) == 1, (host, found)
        assert found <= defaults()


@deferred_f_from_coro_f
async def test_parent_mode_sends_the_page_that_linked_here(site, settings):
    await crawl(settings(REFERER_MODE="parent"), site)
    seed = url_of(site.spec, 0, 0)
    referred = 0
    for row in site.pages():
        url = f"http://{row['host']}{row['path']}"
        if url == seed:
            assert row["referer"] is None
            continue
        parent = page_of(site, row["referer"])
        assert page_of(site, url) in links_of(site.spec, *parent), row
        referred += 1
    assert referred == len(site.pages()) - 1


@deferred_f_from_coro_f
async def test_none_mode_sends_no_referer(site, settings):
    await crawl(settings(REFERER_MODE="none"), site)
    rows = site.pages()
    assert len(rows) > 100
    assert all(row["referer"] is None for row in rows)


@deferred_f_from_coro_f
async def test_rotate_mode_sends_referers_from_the_list(site, settings):
    await crawl(settings(REFERER_MODE="rotate", REFERER_LIST=REFERERS), site)
    referers = [row["referer"] for row in site.pages()]
    assert set(referers) == set(REFERERS)  # the seed gets one too


@deferred_f_from_coro_f
async def test_a_user_agent_file_given_on_the_command_line(site, settings, tmp_path):
    path = tmp_path / "agents.txt"
    path.write_text("# two only\nAgentOne/1.0 (X11, Linux)\n\nAgentTwo/2.0\n")
    await crawl(settings(USERAGENT_LIST=str(path)), site)
    agents = {row["ua"] for row in site.pages()}
    assert agents == {"AgentOne/1.0 (X11, Linux)", "AgentTwo/2.0"}


@deferred_f_from_coro_f
async def test_every_request_names_the_bot_and_robots_txt_gets_its_own(site, settings):
    values = settings(
        ROBOTSTXT_OBEY=True, ROBOTSTXT_USER_AGENT="mybot", USERAGENT_CONTACT=CONTACT
    )
    await crawl(values, site)
    pages = site.pages()
    assert len(pages) > 100
    for row in pages:
        assert f"compatible; mybot/{__version__}; +{CONTACT})" in row["ua"], row
    assert {row["ua"] for row in pages} <= defaults("mybot", CONTACT)
    robots = [row for row in site.log() if row["path"] == "/robots.txt"]
    assert len(robots) == site.spec.hosts
    assert {row["ua"] for row in robots} == {f"mybot/{__version__} (+{CONTACT})"}


@deferred_f_from_coro_f
async def test_a_list_the_user_sets_is_sent_as_is_but_robots_txt_names_the_bot(
    site, settings
):
    values = settings(ROBOTSTXT_OBEY=True, USERAGENT_LIST=["AgentOne/1.0"])
    await crawl(values, site)
    assert {row["ua"] for row in site.pages()} == {"AgentOne/1.0"}
    robots = {row["ua"] for row in site.log() if row["path"] == "/robots.txt"}
    assert robots == {f"crawler/{__version__} (+{PLACEHOLDER})"}
