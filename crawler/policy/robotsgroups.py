"""Which lines of a robots.txt apply to our product token, read as Google's parser does.

Pure. Protego (0.7) groups lines its own way: a ``Crawl-delay`` line between two
``User-agent`` lines ends the group, ``FOO BAR`` is not the token ``foo``,
``FooBot/1.0`` is not ``FooBot``, and a group for ``crawl`` applies to ``crawler``.
So the file is read here as RFC 9309 2.1-2.2 and Google's reference parser
(github.com/google/robotstxt, robots.cc) read it: lines, groups, the groups of our
token (else of ``*``), merged. ``crawler.policy.robotsmatch`` matches URLs against
the ``Allow`` and ``Disallow`` values selected. Deliberate departures from the
reference parser are listed in docs/politeness.md. The ``Content-Signal`` and
``Content-Usage`` lines of our groups are selected too, for
``crawler.policy.robotssignals``; they never change which Allow and Disallow rules
apply.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

# Google ignores the bytes of a line past 8 x 2083 (the longest URL a browser takes),
# keeping 16663 of them (its buffer ends with a NUL).
MAX_LINE_BYTES = 2083 * 8 - 1
# Lines end at CR, LF or CRLF (RFC 9309 2.2), and nowhere else (str.splitlines
# would also split at form feeds and U+2028).
_LINE_END = re.compile(r"\r\n|\r|\n")
_WHITESPACE = " \t\n\v\f\r"
# A product token as a User-agent line names it: letters, digits, "-" and "_", read
# up to the first other character ("FooBot/1.0" and "Foo Bar" name FooBot and Foo).
_TOKEN = re.compile(r"[A-Za-z0-9_-]*")

Kind = Literal[
    "user-agent",
    "allow",
    "disallow",
    "sitemap",
    "crawl-delay",
    "content-signal",
    "content-usage",
    "other",
]
Rule = tuple[Literal["allow", "disallow"], str]

# Key prefixes, matched case-insensitively as the reference parser does (which also
# accepts its list of frequent typos).
_KEYS: tuple[tuple[Kind, tuple[str, ...]], ...] = (
    ("user-agent", ("user-agent", "useragent", "user agent")),
    ("allow", ("allow",)),
    (
        "disallow",
        ("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"),
    ),
    ("sitemap", ("sitemap", "site-map")),
    ("crawl-delay", ("crawl-delay", "crawldelay", "crawl delay")),
    # Content signals (crawler.policy.robotssignals): kept, never obeyed as rules.
    ("content-signal", ("content-signal",)),
    ("content-usage", ("content-usage",)),
)
SIGNAL_KINDS = frozenset({"content-signal", "content-usage"})


@dataclass(slots=True)
class _Group:
    """One group: its User-agent values, then its rules, Crawl-delay values and
    content signal lines ((kind, value))."""

    agents: list[str] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    delays: list[str] = field(default_factory=list)
    signals: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Selection:
    """What a robots.txt says to one product token.

    *rules* come from the groups naming the token, or if none does, from the ``*``
    groups; *specific* says which. *sitemaps* are every ``Sitemap`` value of the
    file (they belong to no group). *signals* are the ``Content-Signal`` and
    ``Content-Usage`` lines ((kind, value)) of the groups that apply to the token,
    grouped as draft-ietf-aipref-attach-05 groups them (``Groups``).
    """

    rules: tuple[Rule, ...]
    crawl_delay: float | None
    sitemaps: tuple[str, ...]
    specific: bool
    signals: tuple[tuple[str, str], ...] = ()


def lines_of(text: str) -> list[str]:
    """The lines of *text*, each cut to ``MAX_LINE_BYTES`` of UTF-8 as Google does."""
    lines = _LINE_END.split(text)
    for index, line in enumerate(lines):
        if len(line) * 4 > MAX_LINE_BYTES and len(line.encode()) > MAX_LINE_BYTES:
            cut = line.encode()[:MAX_LINE_BYTES]
            lines[index] = cut.decode("utf-8", errors="ignore")
    return lines


def directive(line: str) -> tuple[Kind, str] | None:
    """The key kind and the value of one *line*; None for blank lines and comments.

    ``#`` starts a comment. Key and value are split at the first ``:``, or, as Google
    does for a forgotten colon, at whitespace when the line is exactly two words
    (``disallow /``).
    """
    line = line.partition("#")[0].strip(_WHITESPACE)
    if not line:
        return None
    key, colon, value = line.partition(":")
    if not colon:
        words = line.split()
        if len(words) != 2:  # a key and a value
            return None
        key, value = words
    key = key.strip(_WHITESPACE).lower()
    if not key:
        return None
    value = value.strip(_WHITESPACE)
    for kind, prefixes in _KEYS:
        if key.startswith(prefixes):
            return kind, value
    return "other", value


class Groups(NamedTuple):
    """A file's groups, twice: *rules* as Google's parser groups lines (the Allow,
    Disallow and Crawl-delay we obey), *signals* as draft-ietf-aipref-attach-05
    section 3 does (its Content-Usage lines are rules, so they end a group too:
    the content signals of each group); and the file's ``Sitemap`` values."""

    rules: list[_Group]
    signals: list[_Group]
    sitemaps: list[str]


def groups_of(text: str) -> Groups:
    """The groups of *text* and its ``Sitemap`` values.

    A group is one or more ``User-agent`` lines and the rules after them; it ends at
    the next ``User-agent`` line that follows a rule. For the rules we obey, lines
    that are not ``User-agent``, ``Allow`` or ``Disallow`` (``Crawl-delay``,
    ``Sitemap``, content signals, unknown keys, blank lines) never end a group, as
    in Google's parser; for content signals, a signal line ends one as a rule does.
    Rules before any ``User-agent`` line belong to no group and are ignored.
    """
    found = Groups([], [], [])
    current: _Group | None = None
    signals: _Group | None = None  # the current group of found.signals
    for line in lines_of(text):
        parsed = directive(line)
        if parsed is None:
            continue
        kind, value = parsed
        if kind == "user-agent":
            if current is None or current.rules:
                current = _Group()
                found.rules.append(current)
            if signals is None or signals.rules or signals.signals:
                signals = _Group()
                found.signals.append(signals)
            current.agents.append(value)
            signals.agents.append(value)
        elif kind in ("allow", "disallow") and current is not None:
            rule: Rule = ("allow" if kind == "allow" else "disallow", value)
            current.rules.append(rule)
            assert signals is not None  # made with current
            signals.rules.append(rule)
        elif kind == "crawl-delay" and current is not None:
            current.delays.append(value)
        elif kind in SIGNAL_KINDS and signals is not None:
            signals.signals.append((kind, value))
        elif kind == "sitemap":
            found.sitemaps.append(value)
    return found


def names(agent: str, token: str) -> bool:
    """Whether a ``User-agent`` value names our product *token*: its own product
    token (read up to the first character that cannot be in one: a space, a ``/``)
    equals ours, ignoring case. Never a prefix: ``crawl`` does not name ``crawler``.
    """
    match = _TOKEN.match(agent)
    return match is not None and match[0].lower() == token.lower()


def is_star(agent: str) -> bool:
    """Whether a ``User-agent`` value is the ``*`` of every crawler (Google also
    reads ``* anything`` so)."""
    return agent[:1] == "*" and (len(agent) == 1 or agent[1].isspace())


def select(text: str, token: str) -> Selection:
    """The rules, Crawl-delay and sitemaps of *text* for our product *token*.

    RFC 9309 2.2.1: the groups naming the token, merged; if none does, the ``*``
    groups, merged; if neither exists, no rules. A group naming the token applies
    even when it has no rules (everything is then allowed).
    """
    groups = groups_of(text)
    chosen, specific = applying(groups.rules, token)
    rules = tuple(rule for group in chosen for rule in group.rules if rule[1])
    delays = [delay for group in chosen for delay in group.delays]
    signal_groups, _specific = applying(groups.signals, token)
    signals = tuple(line for group in signal_groups for line in group.signals)
    sitemaps = tuple(groups.sitemaps)
    return Selection(rules, crawl_delay(delays), sitemaps, specific, signals)


def applying(groups: list[_Group], token: str) -> tuple[list[_Group], bool]:
    """The *groups* that apply to *token*: those naming it, else the ``*`` ones;
    and whether they name it."""
    chosen = [g for g in groups if any(names(a, token) for a in g.agents)]
    if chosen:
        return chosen, True
    return [g for g in groups if any(is_star(a) for a in g.agents)], False


def crawl_delay(values: list[str]) -> float | None:
    """The longest valid (finite, non-negative) Crawl-delay among *values*.

    Crawl-delay is not part of RFC 9309 and Google ignores it; when a merged group
    gives several, the politest one is kept.
    """
    delays = []
    for value in values:
        try:
            delay = float(value)
        except ValueError:
            continue
        if math.isfinite(delay) and delay >= 0:
            delays.append(delay)
    return max(delays, default=None)
