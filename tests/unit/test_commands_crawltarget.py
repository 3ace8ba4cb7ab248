"""Which crawl a command acts on: the words after a subcommand, and the spider's keys."""

from __future__ import annotations

import pytest
from scrapy import Spider
from scrapy.settings import Settings

from crawler.commands.crawltarget import CrawlNotFoundError, crawl_target, split_spider

NAMES = ["alpha", "bfs"]
# A project of two spiders of its own: this module.
TWO = {"SPIDER_MODULES": [__name__]}


class AlphaSpider(Spider):
    name = "alpha"
    custom_settings = {"FRONTIER_KEY_PREFIX": "alpha-crawl"}  # noqa: RUF012 (Scrapy's type)


class BetaSpider(Spider):
    name = "beta"


@pytest.mark.parametrize(
    ("words", "expected", "spider", "rest"),
    [
        # status, pause, resume, reset, hosts, retry: one word is a spider, known or not
        ([], 0, None, []),
        (["bfs"], 0, "bfs", []),
        (["nope"], 0, "nope", []),
        (["bfs", "x"], 0, None, ["bfs", "x"]),
        # seed: the first word is a spider only if it is one
        (["https://a.example/"], None, None, ["https://a.example/"]),
        (["bfs", "https://a.example/"], None, "bfs", ["https://a.example/"]),
        (["bfs"], None, "bfs", []),
        # set KEY VALUE: a known spider's name, and one word more than expected
        (["DEPTH_LIMIT", "3"], 2, None, ["DEPTH_LIMIT", "3"]),
        (["bfs", "DEPTH_LIMIT", "3"], 2, "bfs", ["DEPTH_LIMIT", "3"]),
        (["DEPTH_LIMIT", "3", "4"], 2, None, ["DEPTH_LIMIT", "3", "4"]),
        (["bfs", "DEPTH_LIMIT"], 2, None, ["bfs", "DEPTH_LIMIT"]),
        (["bfs", "DEPTH_LIMIT"], 1, "bfs", ["DEPTH_LIMIT"]),
    ],
)
def test_the_spiders_name_among_a_subcommands_words(words, expected, spider, rest):
    assert split_spider(words, NAMES, expected=expected) == (spider, rest)


def project(**values: object) -> Settings:
    settings = Settings({"SPIDER_MODULES": ["crawler.spiders"]})
    settings.setdict(values, priority="cmdline")
    return settings


@pytest.mark.parametrize(
    ("values", "spider", "prefix", "keys"),
    [
        ({}, None, None, "bfs"),
        ({}, "bfs", None, "bfs"),
        ({"FRONTIER_KEY_PREFIX": "mine"}, "bfs", None, "mine"),
        ({"FRONTIER_KEY_PREFIX": "mine"}, None, None, "mine"),
        ({}, None, "other", "other"),
        # a project without spiders of its own: the add-on's bfs
        ({"SPIDER_MODULES": []}, None, None, "bfs"),
        # two of its own: a spider's custom settings count, -s wins over them
        (TWO, "alpha", None, "alpha-crawl"),
        (TWO, "beta", None, "beta"),
        (TWO, "bfs", None, "bfs"),
        ({**TWO, "FRONTIER_KEY_PREFIX": "mine"}, "alpha", None, "mine"),
        ({**TWO, "FRONTIER_KEY_PREFIX": "mine"}, None, None, "mine"),
    ],
)
def test_the_crawls_keys(values, spider, prefix, keys):
    assert crawl_target(project(**values), spider, prefix).keys.prefix == keys


@pytest.mark.parametrize(
    ("values", "spider", "words"),
    [
        ({}, "nope", ["unknown spider 'nope'", "bfs"]),
        (TWO, None, ["2 spiders (alpha, beta)", "--prefix"]),
        (TWO, "gamma", ["unknown spider 'gamma'", "alpha, beta, bfs"]),
    ],
)
def test_a_crawl_that_cannot_be_told_is_one_line(values, spider, words):
    with pytest.raises(CrawlNotFoundError) as caught:
        crawl_target(project(**values), spider)
    for word in words:
        assert word in str(caught.value)


def test_the_crawl_has_the_add_ons_defaults_below_the_projects():
    target = crawl_target(project(FRONTIER_SHARDS=8), None)
    assert target.settings.getint("FRONTIER_SHARDS") == 8
    assert target.settings.get("POLITENESS_DAY_HOURS")  # a default of the add-on
    assert target.settings.get("FRONTIER_EMBEDDED_REDIS_DIR") == ".crawl/redis"
