"""Which crawl strategy each host gets: ``FRONTIER_SITE_STRATEGY``, by domain suffix.

A host is crawled ``bfs`` (shallowest first, the crawl's order) or ``dfs`` (its
deepest queued pages first, within that host only), or ``auto``: classified from its
own crawl history (``crawler.policy.siteclass``). A suffix may also set the host's
depth limit, in place of ``DEPTH_LIMIT``. The longest matching suffix wins, as in
every suffix table of the crawler (``crawler.policy.suffixes``); ``*`` names every
other host; with no rule at all every host is ``bfs`` under ``DEPTH_LIMIT``.

Given as a dict (``{"docs.example.org": "dfs", ".edu": {"strategy": "auto",
"depth_limit": 30}, "*": "bfs"}``), a JSON object, or for ``-s`` a comma-separated
string: ``docs.example.org=dfs:30,.edu=auto,*=bfs`` (``STRATEGY[:DEPTH_LIMIT]``).
Pure: no I/O. Every bad value is a ``ValueError`` of one line naming the setting.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

from crawler.policy.suffixes import MAX_NAME_LENGTH, normalize_host, suffixes_of
from crawler.policy.typedsettings import as_int

if TYPE_CHECKING:
    from collections.abc import Mapping

    from crawler.policy.typedsettings import SupportsGet

SETTING = "FRONTIER_SITE_STRATEGY"
Strategy = Literal["bfs", "dfs"]
RuleKind = Literal["bfs", "dfs", "auto"]
RULE_KINDS: tuple[RuleKind, ...] = ("bfs", "dfs", "auto")
# The key of the rule for every host no other suffix matches.
EVERY_HOST = "*"
# What a rule given as a dict may hold.
RULE_FIELDS = frozenset({"strategy", "depth_limit"})
# A suffix as hosts are written (IP addresses are checked apart): labels of letters,
# digits, "-" and "_", joined by dots.
_SUFFIX = re.compile(r"[\w-]+(?:\.[\w-]+)*")
# Longest value text shown in a message (a hostile setting is cut).
_SHOWN = 60


@dataclass(frozen=True, slots=True)
class SiteRule:
    """What a suffix says: the strategy (or ``auto``), the depth limit (None:
    ``DEPTH_LIMIT``), and the suffix itself (``*``: every host; ``""``: no rule
    given, the default)."""

    kind: RuleKind = "bfs"
    depth_limit: int | None = None
    suffix: str = ""

    def depth_limit_or(self, default: int) -> int:
        """The host's depth limit: the rule's own, else *default* (``DEPTH_LIMIT``)."""
        return default if self.depth_limit is None else self.depth_limit

    def source(self) -> str:
        """Where the rule comes from, for reasons: ``rule docs.example.org``,
        ``rule *``, or ``default`` (no rule)."""
        return f"rule {self.suffix}" if self.suffix else "default"


DEFAULT_RULE = SiteRule()


@dataclass(frozen=True, slots=True)
class SiteStrategyConfig:
    """The rules by normalized suffix, and the rule of every other host."""

    rules: Mapping[str, SiteRule]
    fallback: SiteRule = DEFAULT_RULE

    @classmethod
    def from_settings(cls, settings: SupportsGet) -> SiteStrategyConfig:
        """``FRONTIER_SITE_STRATEGY`` read and checked; ``ValueError`` (one line)."""
        return parse_rules(settings.get(SETTING))

    def rule_of(self, host: str) -> SiteRule:
        """The rule of *host*: its longest suffix in the table, else the fallback."""
        if self.rules:
            for suffix in suffixes_of(host):
                found = self.rules.get(suffix)
                if found is not None:
                    return found
        return self.fallback

    @property
    def uses_auto(self) -> bool:
        """Whether any host may be classified from its history (worth loading)."""
        return any(rule.kind == "auto" for rule in self._all_rules())

    @property
    def sets_depth_limits(self) -> bool:
        """Whether any rule sets a depth limit of its own (else DEPTH_LIMIT holds
        for every host and nobody needs to look a host up for it)."""
        return any(rule.depth_limit is not None for rule in self._all_rules())

    def deepest_limit(self, default: int) -> int:
        """The deepest depth any host may be crawled to (0: no limit), given
        ``DEPTH_LIMIT`` *default*: what depth repair must look as far as."""
        limits = [rule.depth_limit_or(default) for rule in self._all_rules()]
        limits.append(default)
        return 0 if 0 in limits else max(limits)

    def _all_rules(self) -> list[SiteRule]:
        return [*self.rules.values(), self.fallback]


def parse_rules(value: object) -> SiteStrategyConfig:
    """The config *value* gives: None, empty, a dict, a JSON object or the
    ``suffix=strategy[:limit],...`` text; ``ValueError`` naming the setting."""
    table = _table(value)
    rules: dict[str, SiteRule] = {}
    fallback = DEFAULT_RULE
    for key, given in table.items():
        suffix = _suffix(key)
        rule = _rule(given, suffix)
        if suffix == EVERY_HOST:
            if fallback is not DEFAULT_RULE:
                raise ValueError(f"{SETTING} names {EVERY_HOST!r} twice")
            fallback = rule
        elif suffix in rules:
            raise ValueError(f"{SETTING} names the domain suffix {suffix!r} twice")
        else:
            rules[suffix] = rule
    return SiteStrategyConfig(rules, fallback)


def _table(value: object) -> dict[object, object]:
    """*value* as suffix -> rule pairs (the text form parsed, JSON decoded)."""
    if value is None:
        return {}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except (ValueError, RecursionError) as exc:
                raise ValueError(f"{SETTING} is not a JSON object: {exc}") from None
        else:
            return _text_table(text)
    if not isinstance(value, dict):
        raise ValueError(  # noqa: TRY004 (a bad setting, like every other)
            f"{SETTING} must be a dict of domain suffix -> bfs, dfs or auto, or "
            f"text such as 'docs.example.org=dfs:30,*=bfs'; got {_shown(value)}"
        )
    return cast("dict[object, object]", value)


def _text_table(text: str) -> dict[object, object]:
    """``suffix=strategy[:limit],...`` as pairs; a repeated suffix is kept twice
    apart by its position, so that it is refused as a repeat, not silently lost."""
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, rule = item.partition("=")
        if not sep:
            raise ValueError(
                f"{SETTING} items must be suffix=strategy (as "
                f"'docs.example.org=dfs:30'), got {_shown(item.strip())}"
            )
        pairs.append((key, rule))
    keys = [_suffix(key) for key, _rule in pairs]
    repeated = next((key for key in keys if keys.count(key) > 1), None)
    if repeated is not None:
        raise ValueError(f"{SETTING} names the domain suffix {repeated!r} twice")
    return dict(pairs)


def _suffix(key: object) -> str:
    """*key* as a normalized suffix (``.Edu.`` -> ``edu``), or ``*``."""
    if not isinstance(key, str):
        raise ValueError(  # noqa: TRY004 (a bad setting, like every other)
            f"{SETTING} keys must be domain suffixes, got {_shown(key)}"
        )
    text = key.strip()
    if text == EVERY_HOST:
        return EVERY_HOST
    suffix = normalize_host(text)
    if suffix and len(suffix) <= MAX_NAME_LENGTH and _is_suffix(suffix):
        return suffix
    raise ValueError(
        f"{SETTING} keys must be domain suffixes (as docs.example.org, .edu, an IP "
        f"address) or '*', got {_shown(key)}"
    )


def _is_suffix(text: str) -> bool:
    """Whether *text* (normalized) is an IP address or a dotted name."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return _SUFFIX.fullmatch(text) is not None
    return True


def _rule(given: object, suffix: str) -> SiteRule:
    """The rule *given* for *suffix*: ``"dfs"``, ``"dfs:30"`` or a dict."""
    where = f"{SETTING}[{suffix!r}]"
    if isinstance(given, str):
        kind, sep, limit = given.strip().partition(":")
        depth_limit = _depth_limit(limit.strip(), where) if sep else None
        return SiteRule(_kind(kind, where), depth_limit, suffix)
    if isinstance(given, dict):
        unknown = sorted(map(str, set(given) - RULE_FIELDS))
        if unknown:
            raise ValueError(
                f"{where} may hold strategy and depth_limit, got {_shown(unknown)}"
            )
        given_limit = given.get("depth_limit")
        depth_limit = None if given_limit is None else _depth_limit(given_limit, where)
        return SiteRule(_kind(given.get("strategy", "bfs"), where), depth_limit, suffix)
    raise ValueError(f"{where} must be bfs, dfs or auto, got {_shown(given)}")


def _kind(text: object, where: str) -> RuleKind:
    kind = text.strip().lower() if isinstance(text, str) else text
    if kind not in RULE_KINDS:
        raise ValueError(
            f"{where} must be bfs, dfs or auto (with :N, a depth limit), "
            f"got {_shown(text)}"
        )
    return kind


def _depth_limit(value: object, where: str) -> int:
    return as_int(value, f"{where}'s depth limit", at_least=0, note="(0: no limit)")


def _shown(value: object) -> str:
    """*value* as a message shows it: its repr, cut."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
