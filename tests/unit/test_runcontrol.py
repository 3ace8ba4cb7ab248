"""A node following the control hash (``crawler.frontier.node.runcontrol``): its own
run-time settings over the crawl-wide ones, the concurrency and weight in force,
being told to drain, and bad values left out."""

from __future__ import annotations

import logging

from scrapy.settings import Settings

from crawler.frontier.node.runcontrol import ControlFollower


def follower(node_id: str | None = "slow") -> ControlFollower:
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    return ControlFollower(settings, "UTC", node_id)


def test_a_node_follows_its_own_settings_over_the_crawl_wide_ones():
    node = follower()
    resumed, configs = node.follow(
        {
            "set:CONCURRENT_REQUESTS": "16",
            "set:DEPTH_LIMIT": "3",
            "node:slow:set:CONCURRENT_REQUESTS": "4",
            "node:slow:set:DEPTH_LIMIT": "5",
            "node:fast:set:CONCURRENT_REQUESTS": "32",
        }
    )
    assert not resumed
    assert configs is not None
    assert configs.depth_limit == 5
    assert node.concurrency == 4
    assert node.weight is None
    assert node.settings == {"CONCURRENT_REQUESTS": "4", "DEPTH_LIMIT": "5"}


def test_the_crawl_wide_concurrency_applies_until_the_node_has_its_own():
    node = follower()
    node.follow({"set:CONCURRENT_REQUESTS": "8"})
    assert node.concurrency == 8
    _, configs = node.follow(
        {"set:CONCURRENT_REQUESTS": "8", "node:slow:set:FRONTIER_NODE_WEIGHT": "0.5"}
    )
    assert configs is not None  # the node's settings changed
    assert (node.concurrency, node.weight) == (8, 0.5)
    _, configs = node.follow({})  # everything unset: the start values stand
    assert configs is not None
    assert (node.concurrency, node.weight) == (None, None)


def test_another_nodes_settings_change_nothing_here():
    node = follower()
    node.follow({"set:DEPTH_LIMIT": "3"})
    _, configs = node.follow(
        {"set:DEPTH_LIMIT": "3", "node:fast:set:CONCURRENT_REQUESTS": "2"}
    )
    assert configs is None
    assert node.concurrency is None


def test_a_bad_value_for_this_node_is_logged_and_the_last_good_ones_kept(caplog):
    node = follower()
    node.follow({"node:slow:set:CONCURRENT_REQUESTS": "4"})
    with caplog.at_level(logging.ERROR):
        _, configs = node.follow({"node:slow:set:CONCURRENT_REQUESTS": "0"})
    assert configs is None
    assert node.concurrency == 4
    assert "CONCURRENT_REQUESTS must be" in caplog.text


def test_a_node_sees_only_its_own_drain(caplog):
    node = follower()
    node.follow({"drain:fast": "1"})
    assert not node.draining
    with caplog.at_level(logging.INFO):
        node.follow({"drain:fast": "1", "drain:slow": "1"})
    assert node.draining
    assert caplog.text.count("told to drain") == 1
    node.follow({"drain:fast": "1", "drain:slow": "1"})
    assert caplog.text.count("told to drain") == 1  # one line, not one a heartbeat


def test_without_an_id_only_crawl_wide_settings_are_followed():
    node = follower(None)
    node.follow({"set:CONCURRENT_REQUESTS": "3", "node:None:set:DEPTH_LIMIT": "1"})
    assert node.concurrency == 3
    assert node.settings == {"CONCURRENT_REQUESTS": "3"}
    node.follow({"drain:None": "1"})
    assert not node.draining
