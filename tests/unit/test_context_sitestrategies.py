"""Unit tests for crawler/context/sitestrategies.py: the crawl's answer to "bfs or
dfs, and how deep" per host, what auto learns, and what it counts."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy.utils.test import get_crawler

from crawler.context.crawl import CrawlContext
from crawler.context.sitestrategies import SiteDecision, SiteStrategies
from crawler.policy.siteclass import SiteEvidence, SiteHistory
from crawler.policy.sitestrategy import parse_rules
from crawler.spiders.bfs import BfsSpider


def strategies(value: object) -> tuple[SiteStrategies, Any]:
    crawler = get_crawler(BfsSpider)
    crawler.stats.open_spider()
    return SiteStrategies(parse_rules(value), crawler), crawler.stats


def evidence(pages: int, links: int, leaving: int, deepest: int) -> SiteEvidence:
    return SiteEvidence.of(pages, links, leaving, {0: 1, deepest: pages - 1})


DEEP = evidence(pages=60, links=600, leaving=6, deepest=8)
PORTAL = evidence(pages=60, links=600, leaving=500, deepest=2)


def test_explicit_rules_answer_with_their_suffix_and_limit():
    sites, _stats = strategies("docs.example.org=dfs:30,*=bfs")
    assert sites.strategy_of("api.docs.example.org") == "dfs"
    assert sites.strategy_of("example.com") == "bfs"
    assert sites.depth_limit_of("docs.example.org", 17) == 30
    assert sites.depth_limit_of("example.com", 17) == 17
    assert sites.depth_limit_of_url("https://docs.example.org/a", 17) == 30
    assert sites.depth_limit_of_url("not a url", 17) == 17
    decision = sites.decision_of("docs.example.org")
    assert decision == SiteDecision("dfs", 30, "rule docs.example.org")
    assert decision.text() == "dfs (rule docs.example.org, depth limit 30)"
    assert sites.decision_of("example.com").text() == "bfs (rule *)"


def test_without_rules_every_host_is_bfs_under_depth_limit():
    sites, _stats = strategies(None)
    assert sites.decision_of("example.com").text() == "bfs (default)"
    assert sites.depth_limit_of_url("https://example.com/", 17) == 17


def test_auto_hosts_are_bfs_until_their_evidence_says_otherwise(caplog):
    caplog.set_level(logging.INFO, logger="crawler.context.sitestrategies")
    sites, stats = strategies("*=auto")
    assert sites.decision_of("docs.example.org").text() == (
        "bfs (auto: 0 pages, too few to tell)"
    )
    sites.learn("docs.example.org", evidence(10, 100, 1, 5))
    assert sites.strategy_of("docs.example.org") == "bfs"
    sites.learn("docs.example.org", DEEP)
    assert sites.decision_of("docs.example.org").text() == (
        "dfs (auto: 1% links leave, depth 8)"
    )
    sites.learn("portal.example.com", PORTAL)
    assert sites.strategy_of("portal.example.com") == "bfs"
    assert stats.get_value("sites/classified_dfs") == 1
    assert stats.get_value("sites/classified_bfs") == 1
    classified = [r for r in caplog.records if "is crawled" in r.getMessage()]
    assert len(classified) == 1  # one line, the rest counted


def test_a_host_classified_again_the_same_way_is_counted_once():
    sites, stats = strategies("*=auto")
    for _ in range(3):
        sites.learn("docs.example.org", DEEP)
        assert sites.strategy_of("docs.example.org") == "dfs"
    sites.learn("docs.example.org", PORTAL)  # it changed: counted again
    assert sites.strategy_of("docs.example.org") == "bfs"
    assert stats.get_value("sites/classified_dfs") == 1
    assert stats.get_value("sites/classified_bfs") == 1


def test_history_of_earlier_crawls_counts_for_auto_hosts_only():
    sites, _stats = strategies("docs.example.org=auto,*=bfs")
    history = SiteHistory().folded(DEEP.observation())
    sites.remember({"docs.example.org": history, "other.org": history})
    assert sites.strategy_of("docs.example.org") == "dfs"
    assert sites.strategy_of("other.org") == "bfs"  # its rule says so
    sites.learn("other.org", DEEP)
    assert sites.decision_of("other.org").text() == "bfs (rule *)"


def test_an_auto_rule_keeps_its_depth_limit():
    sites, _stats = strategies("docs.example.org=auto:4")
    sites.learn("docs.example.org", DEEP)
    assert sites.decision_of("docs.example.org").text() == (
        "dfs (auto: 1% links leave, depth 8, depth limit 4)"
    )
    assert sites.depth_limit_of("docs.example.org", 17) == 4


def test_the_crawl_context_builds_one_and_refuses_a_bad_setting():
    crawler = get_crawler(
        BfsSpider,
        {
            "ADDONS": {"crawler.addon.Frontier": 0},
            "FRONTIER_SITE_STRATEGY": "a.org=dfs",
        },
    )
    context = CrawlContext.of(crawler)
    assert context.sites is context.sites
    assert context.sites.strategy_of("a.org") == "dfs"
    bad = get_crawler(
        BfsSpider,
        {"ADDONS": {"crawler.addon.Frontier": 0}, "FRONTIER_SITE_STRATEGY": "a=x"},
    )
    with pytest.raises(ValueError, match=r"FRONTIER_SITE_STRATEGY\['a'\]"):
        _ = CrawlContext.of(bad).sites
