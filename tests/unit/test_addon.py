"""The add-on: what a Scrapy project that enables it gets, and what stays the user's."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.spidermiddlewares.depth import DepthMiddleware
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from crawler import defaults
from crawler.addon import COMPONENTS, SCHEDULER, Frontier
from crawler.context.crawl import AddonMissingError, CrawlContext
from crawler.frontier.acks import FrontierDepthMiddleware

ADDON = {"crawler.addon.Frontier": 0}
# What scrapy.utils.test.get_crawler itself sets at the project priority.
SET_BY_GET_CRAWLER = frozenset({"REMOTE_CONTROL_ENABLED", "TELNETCONSOLE_ENABLED"})
OUR_SETTINGS = sorted(
    name for name in dir(defaults) if name.isupper() and name not in SET_BY_GET_CRAWLER
)


def applied(**settings: Any) -> Any:
    """The settings of a crawler of a project whose settings are *settings*."""
    return get_crawler(settings_dict=settings).settings


def enabled(settings: Any, name: str) -> dict[Any, Any]:
    """The component priority dict *name*, keys as classes."""
    return {load_object(path): order for path, order in settings.getdict(name).items()}


@pytest.mark.parametrize("name", OUR_SETTINGS)
def test_every_default_reaches_a_project_with_only_the_addon(name: str) -> None:
    settings = applied(ADDONS=ADDON)
    assert settings[name] == getattr(defaults, name)
    assert settings.getpriority(name) == SETTINGS_PRIORITIES["addon"]


def test_a_project_setting_wins_over_the_addon_default() -> None:
    settings = applied(ADDONS=ADDON, FRONTIER_SHARDS=8, DEPTH_LIMIT=3)
    assert settings.getint("FRONTIER_SHARDS") == 8
    assert settings.getint("DEPTH_LIMIT") == 3


def test_the_scheduler_middlewares_and_pipelines_are_installed() -> None:
    settings = applied(ADDONS=ADDON)
    assert settings["SCHEDULER"] == SCHEDULER
    for name, components in COMPONENTS.items():
        installed = enabled(settings, name)
        for path, order in components:
            assert installed[load_object(path)] == order, (name, path)


def test_scrapy_components_ours_replace_are_off() -> None:
    settings = applied(ADDONS=ADDON)
    assert enabled(settings, "SPIDER_MIDDLEWARES")[DepthMiddleware] is None
    assert enabled(settings, "DOWNLOADER_MIDDLEWARES")[RobotsTxtMiddleware] is None


def test_replacing_spider_middlewares_keeps_the_lease_acknowledgement() -> None:
    """-s SPIDER_MIDDLEWARES={} used to remove it silently and hang the crawl."""
    settings = applied(ADDONS=ADDON, SPIDER_MIDDLEWARES={})
    assert enabled(settings, "SPIDER_MIDDLEWARES")[FrontierDepthMiddleware] == 900


def test_an_empty_item_pipelines_setting_leaves_ours_off_too() -> None:
    """`-s ITEM_PIPELINES={}` is how Scrapy users say "no pipelines"."""
    assert enabled(applied(ADDONS=ADDON, ITEM_PIPELINES={}), "ITEM_PIPELINES") == {}
    user = "tests.unit.test_addon.StampPipeline"
    assert set(
        enabled(applied(ADDONS=ADDON, ITEM_PIPELINES={user: 1}), "ITEM_PIPELINES")
    ) == {
        load_object(user),
        *(load_object(path) for path, _ in COMPONENTS["ITEM_PIPELINES"]),
    }


class StampPipeline:
    def process_item(self, item: Any) -> Any:
        return item


def test_a_component_the_user_switched_off_stays_off() -> None:
    path = "crawler.middlewares.traffic.TrafficMiddleware"
    settings = applied(ADDONS=ADDON, DOWNLOADER_MIDDLEWARES={path: None})
    assert enabled(settings, "DOWNLOADER_MIDDLEWARES")[load_object(path)] is None


def test_download_delay_becomes_the_frontiers_floor() -> None:
    settings = applied(ADDONS=ADDON, DOWNLOAD_DELAY=2.5)
    assert settings.getfloat("POLITENESS_MIN_DELAY") == 2.5
    assert settings.getfloat("DOWNLOAD_DELAY") == 0.0


def test_without_download_delay_the_floor_is_the_default() -> None:
    settings = applied(ADDONS=ADDON)
    assert settings.getfloat("POLITENESS_MIN_DELAY") == defaults.POLITENESS_MIN_DELAY
    assert settings.getfloat("DOWNLOAD_DELAY") == 0.0


def test_another_scheduler_chosen_by_the_project_is_kept_without_our_components() -> (
    None
):
    settings = applied(ADDONS=ADDON, SCHEDULER="scrapy.core.scheduler.Scheduler")
    assert settings["SCHEDULER"] == "scrapy.core.scheduler.Scheduler"
    assert FrontierDepthMiddleware not in enabled(settings, "SPIDER_MIDDLEWARES")


def test_the_context_is_reached_through_the_crawler() -> None:
    crawler = get_crawler(settings_dict={"ADDONS": ADDON})
    context = CrawlContext.of(crawler)
    assert context is crawler.get_addon(Frontier)
    assert context.delays is context.delays  # one per crawl
    assert context.outage is context.outage


def test_a_component_without_the_addon_says_what_to_set() -> None:
    with pytest.raises(AddonMissingError, match=r"ADDONS = \{\"crawler.addon.Frontier"):
        CrawlContext.of(get_crawler(settings_dict={}))


def test_two_crawls_have_two_contexts() -> None:
    one = CrawlContext.of(get_crawler(settings_dict={"ADDONS": ADDON}))
    two = CrawlContext.of(get_crawler(settings_dict={"ADDONS": ADDON}))
    assert one is not two
    assert one.delays is not two.delays
