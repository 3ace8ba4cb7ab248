"""crawler/dns/cache.py: this process' answers, bounded, fresh only."""

from __future__ import annotations

from crawler.dns.cache import LocalAnswers
from crawler.policy.dnsanswers import Answer


def test_the_local_answers_keep_the_most_recently_used() -> None:
    local = LocalAnswers(2)
    local.put("a", Answer(("10.0.0.1",), 100))
    local.put("b", Answer(("10.0.0.2",), 100))
    assert local.get("a", 50) is not None  # a is now the most recent
    local.put("c", Answer(("10.0.0.3",), 100))
    assert local.get("b", 50) is None
    assert local.get("a", 50) is not None
    assert local.get("c", 50) is not None


def test_a_stale_local_answer_is_not_given() -> None:
    local = LocalAnswers(2)
    local.put("a", Answer(("10.0.0.1",), 100))
    assert local.get("a", 100) is None
    assert local.get("a", 50) is None  # dropped when found stale
