"""Content signals of robots.txt (crawler/policy/robotssignals.py, read through
crawler/policy/robotsrules.py): the published files give the signals their
specifications list for each path; hostile files never raise."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.contentsignals import MAX_KEYS, checked
from crawler.policy.robotsrules import RobotsRules, parse_rules
from crawler.policy.robotssignals import MAX_RULES, split_rule
from tests.unit.properties import PROPERTY

BASE = "http://example.com/robots.txt"
USAGE = "robots:content-usage"
SIGNAL = "robots:content-signal"

# draft-ietf-aipref-attach-05 section 3.4, "Example robots.txt file".
ATTACH_EXAMPLE = """\
User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: / train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: / train-ai=y
"""

# Cloudflare's managed robots.txt (developers.cloudflare.com, "robots.txt setting"):
# the policy in comments, a Content-Signal line in the * group, then groups for
# AI crawlers.
CLOUDFLARE_MANAGED = """\
# As a condition of accessing this website, you agree to abide by the
# following content signals:
# (a) If a content-signal = yes, you may collect content for the
# corresponding use.
User-Agent: *
Content-Signal: search=yes,ai-train=no
Allow: /

User-agent: GPTBot
Disallow: /

User-agent: CCBot
Disallow: /
"""


def rules(text: str, user_agent: str = "crawler") -> RobotsRules:
    parsed = parse_rules(text, user_agent=user_agent, base_url=BASE)
    assert parsed is not None
    return parsed


def signals_at(text: str, path: str, user_agent: str = "crawler") -> object:
    return rules(text, user_agent).signals_for(f"http://example.com{path}")


@pytest.mark.parametrize(
    ("path", "crawled", "usage"),
    [
        # The draft's table of usage preferences for different paths.
        ("/test", True, {"train-ai": "n"}),
        ("/never/test", False, {"train-ai": "n"}),  # never fetched: never recorded
        ("/ai-ok/test", True, {"train-ai": "y"}),
    ],
)
def test_the_attach_drafts_example_for_other_crawlers(
    path: str, crawled: bool, usage: dict[str, str]
) -> None:
    parsed = rules(ATTACH_EXAMPLE)
    assert parsed.allows(f"http://example.com{path}") is crawled
    assert parsed.signals_for(f"http://example.com{path}") == {USAGE: usage}


@pytest.mark.parametrize("path", ["/test", "/never/test", "/ai-ok/test"])
def test_the_attach_drafts_example_for_examplebot(path: str) -> None:
    """ "ExampleBot uses the second group": all content, train-ai=y."""
    assert signals_at(ATTACH_EXAMPLE, path, "ExampleBot") == {USAGE: {"train-ai": "y"}}


def test_cloudflares_managed_file_signals_every_path_to_us() -> None:
    for path in ("/", "/any/page.html?q=1"):
        assert signals_at(CLOUDFLARE_MANAGED, path) == {
            SIGNAL: {"search": "yes", "ai-train": "no"}
        }
    # GPTBot's own group has no signal line: none applies to it.
    assert signals_at(CLOUDFLARE_MANAGED, "/", "GPTBot") == {}


def test_the_group_naming_our_token_gives_its_own_signals() -> None:
    text = (
        "User-agent: *\nContent-Signal: ai-train=no\n\n"
        "User-agent: crawler\nContent-Signal: ai-train=yes\nAllow: /\n"
    )
    assert signals_at(text, "/x") == {SIGNAL: {"ai-train": "yes"}}


def test_a_path_led_content_signal_applies_under_its_path_only() -> None:
    text = (
        "User-agent: *\nContent-Signal: search=yes, ai-train=no\n"
        "Content-Signal: /blog/ ai-train=yes\nAllow: /\n"
    )
    assert signals_at(text, "/about") == {SIGNAL: {"search": "yes", "ai-train": "no"}}
    # The longest matching rule decides, as for Content-Usage: the blog's own line.
    assert signals_at(text, "/blog/post") == {SIGNAL: {"ai-train": "yes"}}


def test_rules_of_one_path_combine_and_a_disallow_wins() -> None:
    text = (
        "User-agent: *\nContent-Usage: /a/ train-ai=y\n"
        "Content-Usage: /a/ train-ai=n, search=y\nContent-Usage: /a/ ai-use=y\n"
    )
    assert signals_at(text, "/a/b") == {
        USAGE: {"train-ai": "n", "search": "y", "ai-use": "y"}
    }


def test_content_usage_paths_match_as_allow_rules_do() -> None:
    text = (
        "User-agent: *\nContent-Usage: / search=y\n"
        "Content-Usage: /*.pdf$ train-ai=n\nContent-Usage: /%62log/ train-ai=y\n"
    )
    assert signals_at(text, "/docs/a.pdf") == {USAGE: {"train-ai": "n"}}
    assert signals_at(text, "/docs/a.pdf?x=1") == {USAGE: {"search": "y"}}
    # %62 is "b": the rule and the URL are normalized alike (RFC 9309 2.2.2).
    assert signals_at(text, "/blog/1") == {USAGE: {"train-ai": "y"}}


def test_both_vocabularies_are_recorded_side_by_side() -> None:
    text = (
        "User-agent: *\nContent-Signal: ai-train=no\n"
        "Content-Usage: /deep/ train-ai=n\nAllow: /\n"
    )
    assert signals_at(text, "/deep/x") == {
        SIGNAL: {"ai-train": "no"},
        USAGE: {"train-ai": "n"},
    }
    assert signals_at(text, "/shallow") == {SIGNAL: {"ai-train": "no"}}


def test_a_content_usage_line_without_a_path_applies_everywhere() -> None:
    assert signals_at("User-agent: *\nContent-Usage: train-ai=n\n", "/x/y") == {
        USAGE: {"train-ai": "n"}
    }


def test_a_longest_rule_stating_nothing_leaves_its_source_out() -> None:
    text = (
        "User-agent: *\nContent-Usage: / train-ai=n\n"
        "Content-Usage: /open/\nContent-Usage: /bad/ Train-AI=y\n"
    )
    parsed = rules(text)
    assert parsed.signals_for("http://example.com/x") == {USAGE: {"train-ai": "n"}}
    assert parsed.signals_for("http://example.com/open/x") == {}
    assert parsed.signals_for("http://example.com/bad/x") == {}
    assert (parsed.signals.lines, parsed.signals.skipped) == (3, 2)


def test_signal_lines_never_end_a_group() -> None:
    """The rules we obey stay those Google's parser finds: a Content-Usage line
    between two User-agent lines does not split the group."""
    text = (
        "User-agent: crawler\nContent-Usage: / train-ai=n\nUser-agent: *\nDisallow: /\n"
    )
    parsed = rules(text)
    assert not parsed.allows("http://example.com/x")
    assert parsed.signals_for("http://example.com/x") == {USAGE: {"train-ai": "n"}}


def test_lines_outside_any_group_and_other_bots_groups_do_not_apply() -> None:
    text = (
        "Content-Signal: ai-train=no\n"
        "User-agent: otherbot\nContent-Signal: search=no\n"
        "User-agent: *\nAllow: /\n"
    )
    assert signals_at(text, "/") == {}


def test_comments_and_key_case_are_robots_txt_s() -> None:
    text = "user-agent: *\nCONTENT-SIGNAL: search=yes # for everyone\n"
    assert signals_at(text, "/") == {SIGNAL: {"search": "yes"}}


def test_a_file_with_too_many_signal_rules_keeps_the_first() -> None:
    lines = "".join(f"Content-Usage: /p{i}/ train-ai=n\n" for i in range(MAX_RULES + 9))
    parsed = rules("User-agent: *\n" + lines)
    assert len(parsed.signals.rules) == MAX_RULES
    assert (parsed.signals.lines, parsed.signals.skipped) == (MAX_RULES + 9, 9)
    assert parsed.signals_for(f"http://example.com/p{MAX_RULES}/") == {}
    assert parsed.signals_for("http://example.com/p0/") == {USAGE: {"train-ai": "n"}}


def test_a_file_without_signals_states_none() -> None:
    parsed = rules("User-agent: *\nDisallow: /private\n")
    assert parsed.signals_for("http://example.com/") == {}
    assert (parsed.signals.lines, parsed.signals.skipped) == (0, 0)


@pytest.mark.parametrize(
    ("value", "split"),
    [
        ("/ train-ai=n", ("/", "train-ai=n")),
        ("/a/b\t \ttrain-ai=n, search=y", ("/a/b", "train-ai=n, search=y")),
        ("/only-a-path", ("/only-a-path", "")),
        ("search=yes", ("/", "search=yes")),
    ],
)
def test_a_rule_is_a_path_then_an_expression(
    value: str, split: tuple[str, str]
) -> None:
    assert split_rule(value) == split


# --- hostile files ---------------------------------------------------------------------

robots_words = st.sampled_from(
    ["User-agent: *", "User-agent: crawler", "Content-Usage:", "Content-Signal:",
     "Allow: /", "Disallow: /x", " /", "/a*", "$", " train-ai=n", " search=yes",
     ",", "=", ";", '"', "(", "#", "\n", "\r", "\t", "%", "%zz", "ツ", "\x00", "Y"]
)  # fmt: skip


@PROPERTY
@given(st.lists(robots_words, max_size=60).map("".join), st.text(max_size=30))
def test_any_robots_file_gives_signals_for_any_path(text: str, path: str) -> None:
    parsed = parse_rules(text, user_agent="crawler", base_url=BASE)
    assert parsed is not None
    signals = parsed.signals_for(f"http://example.com/{path}")
    assert checked(signals) == (signals or None)
    for values in signals.values():
        assert len(values) <= MAX_KEYS
