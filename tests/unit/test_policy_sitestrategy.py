"""Unit tests for crawler/policy/sitestrategy.py: FRONTIER_SITE_STRATEGY read,
checked and matched (the longest suffix wins), hostile values refused in one line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.policy.sitestrategy import (
    DEFAULT_RULE,
    SETTING,
    SiteRule,
    SiteStrategyConfig,
    parse_rules,
)
from tests.unit.properties import PROPERTY

TEXT = "docs.example.org=dfs:30,.edu=auto,*=bfs"


def rules_of(value: object) -> dict[str, tuple[str, int | None]]:
    config = parse_rules(value)
    found = {suffix: (r.kind, r.depth_limit) for suffix, r in config.rules.items()}
    if config.fallback is not DEFAULT_RULE:
        found["*"] = (config.fallback.kind, config.fallback.depth_limit)
    return found


@pytest.mark.parametrize(
    "value",
    [
        TEXT,
        {"docs.example.org": "dfs:30", ".edu": "auto", "*": "bfs"},
        {
            "DOCS.Example.org.": {"strategy": "dfs", "depth_limit": 30},
            "edu": {"strategy": "AUTO"},
            "*": {},
        },
        json.dumps({"docs.example.org": "dfs:30", ".edu": "auto", "*": "bfs"}),
        " docs.example.org = dfs : 30 , .edu=auto ,, *=bfs ",
    ],
)
def test_every_form_of_the_setting_says_the_same(value):
    assert rules_of(value) == {
        "docs.example.org": ("dfs", 30),
        "edu": ("auto", None),
        "*": ("bfs", None),
    }


@pytest.mark.parametrize("value", [None, "", "  ", {}, "{}"])
def test_unset_means_every_host_bfs_under_depth_limit(value):
    config = parse_rules(value)
    assert config.rule_of("anything.example.com") == DEFAULT_RULE
    assert DEFAULT_RULE.kind == "bfs"
    assert DEFAULT_RULE.depth_limit_or(17) == 17
    assert not config.uses_auto
    assert not config.sets_depth_limits


@pytest.mark.parametrize(
    ("host", "suffix", "kind", "limit"),
    [
        ("docs.example.org", "docs.example.org", "dfs", 30),
        ("API.Docs.Example.org.", "docs.example.org", "dfs", 30),
        ("www.example.org", "example.org", "bfs", 5),
        ("cs.mit.edu", "edu", "auto", None),
        ("edu", "edu", "auto", None),
        ("notedu.com", "*", "bfs", None),  # a suffix is whole labels
        ("127.0.0.3", "127.0.0.3", "dfs", 2),
        ("127.0.0.4", "*", "bfs", None),  # 0.3 is no domain of 127.0.0.3
    ],
)
def test_the_longest_matching_suffix_wins(host, suffix, kind, limit):
    config = parse_rules(
        {
            "docs.example.org": "dfs:30",
            "example.org": "bfs:5",
            "edu": "auto",
            "127.0.0.3": "dfs:2",
            "*": "bfs",
        }
    )
    rule = config.rule_of(host)
    assert (rule.suffix, rule.kind, rule.depth_limit) == (suffix, kind, limit)


def test_the_config_says_what_the_frontier_needs_to_know():
    config = parse_rules("a.org=dfs:30,b.org=auto")
    assert config.uses_auto
    assert config.sets_depth_limits
    assert config.deepest_limit(17) == 30
    assert config.deepest_limit(40) == 40
    assert config.deepest_limit(0) == 0  # DEPTH_LIMIT=0: no limit anywhere
    assert parse_rules("a.org=dfs:0").deepest_limit(17) == 0
    assert not parse_rules("a.org=dfs").sets_depth_limits


def test_a_rule_names_where_it_comes_from():
    config = parse_rules("a.org=dfs,*=bfs")
    assert config.rule_of("x.a.org").source() == "rule a.org"
    assert config.rule_of("b.org").source() == "rule *"
    assert SiteRule().source() == "default"


def test_it_is_read_from_scrapy_settings():
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    assert SiteStrategyConfig.from_settings(settings).rules == {}
    settings.set(SETTING, TEXT, priority="cmdline")  # as -s gives it
    assert set(SiteStrategyConfig.from_settings(settings).rules) == {
        "docs.example.org",
        "edu",
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a.org=dsf", "FRONTIER_SITE_STRATEGY['a.org'] must be bfs, dfs or auto"),
        ("a.org", "items must be suffix=strategy"),
        ("http://a.org=dfs", "keys must be domain suffixes"),
        ("a b.org=dfs", "keys must be domain suffixes"),
        ("=dfs", "keys must be domain suffixes"),
        ("a.org=dfs:-1", "['a.org']'s depth limit must be >= 0 (0: no limit), got -1"),
        ("a.org=dfs:deep", "['a.org']'s depth limit must be an integer, got 'deep'"),
        ("a.org=dfs:1e3", "must be an integer"),
        ("a.org=dfs,A.ORG.=bfs", "names the domain suffix 'a.org' twice"),
        ("*=dfs,*=bfs", "names the domain suffix '*' twice"),
        ('{"a.org": ', "FRONTIER_SITE_STRATEGY is not a JSON object"),
        ('{"a.org": 3}', "['a.org'] must be bfs, dfs or auto, got 3"),
        ({"a.org": {"strategy": "dfs", "limit": 3}}, "may hold strategy and depth"),
        ({"a.org": {"depth_limit": True}}, "must be an integer, got True"),
        ({3: "dfs"}, "keys must be domain suffixes, got 3"),
        (["a.org=dfs"], "must be a dict of domain suffix"),
        (7, "must be a dict of domain suffix"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_setting(value, message):
    with pytest.raises(ValueError, match="FRONTIER_SITE_STRATEGY") as raised:
        parse_rules(value)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_hostile_value_is_cut_in_the_message():
    with pytest.raises(ValueError, match="FRONTIER_SITE_STRATEGY") as raised:
        parse_rules({"a.org": "x" * 10_000})
    assert len(str(raised.value)) < 300


@PROPERTY
@given(
    st.one_of(
        st.text(max_size=80),
        st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=5),
    )
)
def test_any_value_is_read_or_refused_in_one_line(value):
    try:
        config = parse_rules(value)
    except ValueError as exc:
        message = str(exc)
    else:
        for rule in (*config.rules.values(), config.fallback):
            assert rule.kind in ("bfs", "dfs", "auto")
            assert rule.depth_limit is None or rule.depth_limit >= 0
        return
    assert message.startswith(SETTING)
    assert "\n" not in message


@PROPERTY
@given(st.text(max_size=300))
def test_any_host_gets_a_rule(host):
    config = parse_rules("a.org=dfs:3,*=auto")
    assert config.rule_of(host).kind in ("dfs", "auto")
