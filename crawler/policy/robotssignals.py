"""Which content signals of a robots.txt apply to a URL, for our product token.

Pure. ``crawler.policy.robotsgroups`` selects the ``Content-Signal`` and
``Content-Usage`` lines of the groups that apply to our token, the very groups whose
Allow and Disallow rules we obey (RFC 9309 2.2.1). Each line is a rule: a path, then
an expression (``crawler.policy.contentsignals``). draft-ietf-aipref-attach-05
section 3.1: a Content-Usage rule applies to the paths it matches as an Allow rule
would (RFC 9309 2.2.2, ``crawler.policy.robotsmatch``: ``*``, a final ``$``, the
same normalization), the matching rule with the most octets wins, and rules of an
identical path combine (vocab 7.1: a disallowing value wins). Content-Signal lines
are read the same way (contentsignals.org lets a path lead the value); each
vocabulary is its own source, so one never hides the other.

Lenient where the intent is plain: a line with no leading ``/`` applies to every
path, as ``/`` would (a Content-Signal line usually has none; attach-05 requires a
path for Content-Usage, but nothing else can be meant). The longest matching rule
decides even when it states nothing readable: nothing is then recorded for its
source, and what it failed to state was counted when the file was read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.contentsignals import (
    ROBOTS_CONTENT_SIGNAL,
    ROBOTS_CONTENT_USAGE,
    SIGNAL_DISALLOW,
    USAGE_DISALLOW,
    Signals,
    combined,
    parse_content_signal,
    parse_content_usage,
)
from crawler.policy.robotsmatch import Pattern

if TYPE_CHECKING:
    from collections.abc import Iterable

# Signal rules kept from one file's groups for our token; a hostile file could hold
# thousands, and every URL of the origin is matched against them.
MAX_RULES = 256
# The path ends at the first SP or HTAB (attach-05 3.2).
_PATH_END = re.compile(r"[ \t]+")
# Each line kind's source, and the value that disallows in each source's vocabulary.
_KINDS = {
    "content-signal": ROBOTS_CONTENT_SIGNAL,
    "content-usage": ROBOTS_CONTENT_USAGE,
}
_DISALLOW = {
    ROBOTS_CONTENT_SIGNAL: SIGNAL_DISALLOW,
    ROBOTS_CONTENT_USAGE: USAGE_DISALLOW,
}


@dataclass(frozen=True, slots=True)
class SignalRule:
    """One Content-Signal or Content-Usage line: its source, path and statement."""

    source: str
    pattern: Pattern
    values: dict[str, str]


@dataclass(frozen=True, slots=True)
class RobotsSignals:
    """The signal rules of one robots.txt for our token; *lines* read, and parts of
    them *skipped* (unreadable, over the limits, rules past ``MAX_RULES``)."""

    rules: tuple[SignalRule, ...] = ()
    lines: int = 0
    skipped: int = 0

    def for_path(self, path: str) -> Signals:
        """The signals that apply to the normalized *path* (``robotsmatch.path_of``):
        per source, the longest matching rules' statements, combined."""
        best: dict[str, tuple[int, list[SignalRule]]] = {}
        for rule in self.rules:
            priority, chosen = best.get(rule.source, (-1, []))
            if rule.pattern.priority < priority or not rule.pattern.matches(path):
                continue
            if rule.pattern.priority > priority:
                chosen = []
            chosen.append(rule)
            best[rule.source] = (rule.pattern.priority, chosen)
        signals: Signals = {}
        for source, (_priority, rules) in best.items():
            values = combined((rule.values for rule in rules), _DISALLOW[source])
            if values:
                signals[source] = values
        return signals


def robots_signals(lines: Iterable[tuple[str, str]]) -> RobotsSignals:
    """The rules of *lines*: (kind, value) pairs, kind ``content-signal`` or
    ``content-usage``, each value as robotsgroups read it (comment cut, stripped)."""
    rules: list[SignalRule] = []
    count = skipped = 0
    for kind, value in lines:
        source = _KINDS.get(kind)
        if source is None:
            continue
        count += 1
        if len(rules) >= MAX_RULES:
            skipped += 1
            continue
        path, expression = split_rule(value)
        if source == ROBOTS_CONTENT_USAGE:
            stated = parse_content_usage(expression.encode("utf-8", "surrogatepass"))
        else:
            stated = parse_content_signal(expression)
        if not expression:
            skipped += 1  # a path alone states nothing
        skipped += stated.skipped
        rules.append(SignalRule(source, Pattern.of("allow", path), stated.values))
    return RobotsSignals(tuple(rules), count, skipped)


def split_rule(value: str) -> tuple[str, str]:
    """(path, expression) of a rule's value: the path up to the first SP or HTAB,
    if the value starts with ``/``; else ``/`` and the whole value."""
    if not value.startswith("/"):
        return "/", value
    path, *rest = _PATH_END.split(value, maxsplit=1)
    return path, rest[0] if rest else ""
