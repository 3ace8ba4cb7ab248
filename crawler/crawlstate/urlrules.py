"""UrlRules: each host's learnt URL rewrites (``crawler.policy.duplicateurls``), kept
in Redis so that every node learns from every node's pages.

One hash a host (``CrawlKeys.url_rules``): a rule's count of distinct evidence, -1
once a page contradicted it, and the evidence itself until the rule has the pieces
it needs (``NEARDUP_RULE_SUPPORT``, or as ``evidence_needed`` says; then no more is
written: a rule's fields stay few). One Lua script adds a page's evidence, so two
nodes never count one piece twice. A node reads a host's rules at most once every ``FRESH_FOR`` seconds: a
rule learnt elsewhere applies here a few seconds later, and a node asks Redis about
a host's links once, not once a link.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from crawler.policy.duplicateurls import evidence_needed, is_rule

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import redis.asyncio

    from crawler.crawlstate.keys import CrawlKeys
    from crawler.policy.duplicateurls import Evidence

FRESH_FOR = 5.0  # seconds a host's rules are used before they are read again
HOSTS_KEPT = 10_000  # hosts whose rules a node keeps in memory, least recent dropped
KEPT_FOR = 7 * 86_400  # seconds a host's rules outlive their last evidence
RULE = "r:"
EVIDENCE = "e:"

# KEYS[1] the host's rules; ARGV: seconds kept, then (rule, where, near, need)
# quadruples, need being the evidence that confirms the rule
# (duplicateurls.evidence_needed). Returns the rules confirmed by this call.
LEARN = """
local learnt = {}
for i = 2, #ARGV, 4 do
  local rule, where, near = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local need = tonumber(ARGV[i + 3])
  local field = 'r:' .. rule
  local count = tonumber(redis.call('HGET', KEYS[1], field) or '0') or 0
  if near ~= '1' then
    redis.call('HSET', KEYS[1], field, -1)
  elseif count >= 0 and count < need then
    if redis.call('HSETNX', KEYS[1], 'e:' .. rule .. ' ' .. where, 1) == 1 then
      count = redis.call('HINCRBY', KEYS[1], field, 1)
      if count == need then
        learnt[#learnt + 1] = rule
      end
    end
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return learnt
"""


class UrlRules:
    """Learns and reads the rules of each host; the caller handles Redis errors."""

    def __init__(
        self,
        client: Callable[[], redis.asyncio.Redis],
        keys: CrawlKeys,
        support: int,
    ) -> None:
        self._client = client
        self._keys = keys
        self._support = support
        self._known: OrderedDict[str, tuple[float, frozenset[str]]] = OrderedDict()

    @property
    def enabled(self) -> bool:
        """Whether rules are learnt and applied at all (``NEARDUP_RULE_SUPPORT``)."""
        return self._support > 0

    async def learn(
        self, host: str, evidence: Sequence[tuple[Evidence, bool]]
    ) -> list[str]:
        """Add *evidence* (each piece, and whether its pages were near-duplicates);
        the rules that it confirmed. A confirmed rule applies here at once."""
        if not self.enabled or not evidence:
            return []
        args: list[str | int] = [KEPT_FOR]
        for piece, near in evidence:
            need = evidence_needed(piece.rule, self._support)
            args += [piece.rule, piece.where, "1" if near else "0", need]
        key = self._keys.url_rules(host)
        answer = await self._client().eval(LEARN, 1, key, *args)
        learnt = [_text(rule) for rule in answer or []]
        if learnt or any(not near for _, near in evidence):
            self._known.pop(host, None)  # read again at the next link
        return learnt

    def cached(self, host: str, now: float | None = None) -> frozenset[str] | None:
        """*host*'s rules if read lately (none to learn: an empty set), else None:
        then ``of`` asks Redis."""
        if not self.enabled:
            return frozenset()
        known = self._known.get(host)
        now = time.monotonic() if now is None else now
        if known is None or known[0] <= now:
            return None
        self._known.move_to_end(host)
        return known[1]

    async def of(self, host: str, now: float | None = None) -> frozenset[str]:
        """The confirmed, uncontradicted rules of *host*, read from Redis at most
        once every ``FRESH_FOR`` seconds."""
        if not self.enabled:
            return frozenset()
        now = time.monotonic() if now is None else now
        known = self.cached(host, now)
        if known is not None:
            return known
        fields = await self._client().hgetall(self._keys.url_rules(host))
        rules = frozenset(
            rule
            for field, count in fields.items()
            if (rule := _rule_of(_text(field)))
            and _count(count) >= evidence_needed(rule, self._support)
        )
        self._known[host] = (now + FRESH_FOR, rules)
        self._known.move_to_end(host)
        if len(self._known) > HOSTS_KEPT:
            self._known.popitem(last=False)
        return rules


def _rule_of(field: str) -> str:
    """The rule a hash field counts, or "" for evidence and damaged fields."""
    rule = field.removeprefix(RULE)
    return rule if rule != field and is_rule(rule) else ""


def _count(value: bytes | str) -> int:
    try:
        return int(value)
    except ValueError:
        return -1  # damaged: never applied


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
