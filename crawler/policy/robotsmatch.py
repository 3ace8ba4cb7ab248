"""Whether a URL matches robots.txt rules: RFC 9309 2.2.2-2.2.3, as Google matches.

Pure. A pattern is anchored at the start of the path; ``*`` stands for any run of
characters and ``$`` at its very end for the end of the path (elsewhere it is a plain
character). The matching rule with the most octets wins; between an ``Allow`` and a
``Disallow`` of the same length, ``Allow``. Path and patterns are compared after the
same normalization (``normalized``), so a rule and a URL that spell one path two
ways still meet.

Protego (0.7) is not used for this: it also matches every ``.../x$`` rule as the
literal ``.../x$`` prefix, where the reference parser and RFC 9309 anchor it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Iterable

_HEX = frozenset(b"0123456789abcdefABCDEF")
# RFC 3986 2.3: an escaped unreserved character is that character (6.2.2.2).
_UNRESERVED = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)
# ASCII that can never stand raw in a URI (RFC 3986 2, appendix A): always escaped.
_NOT_IN_URIS = frozenset(b' "<>\\^`{|}')


def normalized(text: str) -> str:
    """*text* with its percent-encoding normalized (RFC 3986 6.2.2, RFC 9309 2.2.2).

    Escapes take upper-case hex; escaped unreserved characters are decoded; octets
    outside US-ASCII, controls and characters a URI cannot hold are escaped.
    Reserved characters stay as written: ``/`` and ``%2F`` are different paths.
    A ``%`` that starts no escape is kept.
    """
    data = text.encode("utf-8", errors="surrogatepass")
    plain = text.isascii() and text.isprintable() and "%" not in text
    if plain and _NOT_IN_URIS.isdisjoint(data):
        return text
    out: list[str] = []
    index = 0
    while index < len(data):
        byte = data[index]
        escape = data[index + 1 : index + 3]
        if (
            byte == 0x25
            and len(escape) == 2
            and escape[0] in _HEX
            and escape[1] in _HEX
        ):
            value = int(escape, 16)
            out.append(chr(value) if value in _UNRESERVED else f"%{value:02X}")
            index += 3
            continue
        if byte >= 0x7F or byte < 0x21 or byte in _NOT_IN_URIS:
            out.append(f"%{byte:02X}")
        else:
            out.append(chr(byte))
        index += 1
    return "".join(out)


def path_of(url: str) -> str:
    """The path, params and query of *url* (no fragment), normalized; ``/`` at least.

    Raises ``ValueError`` for a URL ``urlsplit`` refuses.
    """
    without_fragment = url.partition("#")[0]
    parts = urlsplit(without_fragment)
    path = parts.path or "/"
    if "?" in without_fragment:
        path += "?" + parts.query
    if not path.startswith("/"):
        path = "/" + path
    return normalized(path)


@dataclass(frozen=True, slots=True)
class Pattern:
    """One ``Allow`` or ``Disallow`` value, normalized and split at its ``*``."""

    allow: bool
    priority: int  # its length in octets, normalized (RFC 9309 2.2.2)
    parts: tuple[str, ...]
    anchored: bool

    @classmethod
    def of(cls, kind: Literal["allow", "disallow"], value: str) -> Pattern:
        text = normalized(value)
        anchored = text.endswith("$")
        body = text[:-1] if anchored else text
        return cls(kind == "allow", len(text), tuple(body.split("*")), anchored)

    def matches(self, path: str) -> bool:
        """Whether *path* matches: the parts in order, leftmost first (which finds
        a match whenever one exists), the last at the end if anchored."""
        parts = self.parts
        if len(parts) == 1:
            return path == parts[0] if self.anchored else path.startswith(parts[0])
        if not path.startswith(parts[0]):
            return False
        position = len(parts[0])
        for part in parts[1:-1]:
            found = path.find(part, position)
            if found < 0:
                return False
            position = found + len(part)
        last = parts[-1]
        if self.anchored:
            return len(path) - len(last) >= position and path.endswith(last)
        return path.find(last, position) >= 0


@dataclass(frozen=True, slots=True)
class Matcher:
    """Rules ready to match, looked up by the path's own prefixes rather than tried
    in turn: a hostile file of 25,000 rules costs a URL microseconds.

    *prefixes* maps a plain pattern to whether it allows (an Allow wins a tie);
    *exact* the same for an anchored pattern without ``*`` (``$`` left out);
    *wildcards* maps the text before a pattern's first ``*`` to its patterns.
    *lengths* are the lengths of those keys, longest first.
    """

    prefixes: dict[str, bool]
    exact: dict[str, bool]
    wildcards: dict[str, tuple[Pattern, ...]]
    lengths: tuple[int, ...]

    def allows(self, path: str) -> bool:
        """Whether the best rule matching the normalized *path* allows it (none:
        allowed). ``/robots.txt`` is always allowed (RFC 9309 2.2.2)."""
        if path == "/robots.txt":
            return True
        best = (-1, True)  # (priority, allow): the longest, then Allow
        if path in self.exact:
            best = (len(path) + 1, self.exact[path])
        prefix_found = False
        for length in self.lengths:
            if length > len(path):
                continue
            head = path[:length]
            allow = None if prefix_found else self.prefixes.get(head)
            if allow is not None:
                prefix_found = True
                best = max(best, (length, allow))
            for pattern in self.wildcards.get(head, ()):
                if pattern.priority >= best[0] and pattern.matches(path):
                    best = max(best, (pattern.priority, pattern.allow))
        return best[1]


def compiled(rules: Iterable[tuple[Literal["allow", "disallow"], str]]) -> Matcher:
    """*rules* (empty values left out) ready to match.

    As Google does, ``Allow: /dir/index.htm...`` also allows ``/dir/`` itself.
    """
    prefixes: dict[str, bool] = {}
    exact: dict[str, bool] = {}
    wildcards: dict[str, list[Pattern]] = {}
    for kind, value in rules:
        if not value:
            continue
        patterns = [Pattern.of(kind, value)]
        slash = value.rfind("/")
        if kind == "allow" and slash >= 0 and value.startswith("/index.htm", slash):
            patterns.append(Pattern.of("allow", value[: slash + 1] + "$"))
        for pattern in patterns:
            head = pattern.parts[0]
            if len(pattern.parts) > 1:
                wildcards.setdefault(head, []).append(pattern)
                continue
            table = exact if pattern.anchored else prefixes
            table[head] = table.get(head, False) or pattern.allow
    lengths = sorted({len(key) for key in (*prefixes, *wildcards)}, reverse=True)
    frozen = {head: tuple(found) for head, found in wildcards.items()}
    return Matcher(prefixes, exact, frozen, tuple(lengths))
