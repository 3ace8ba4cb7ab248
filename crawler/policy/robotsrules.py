"""The rules of one robots.txt for our product token: what RobotsMiddleware asks.

Pure. ``crawler.policy.robotsgroups`` picks the lines that apply to the token and
``crawler.policy.robotsmatch`` matches URLs against them, as RFC 9309 and Google's
reference parser do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.robotsfetch import MAX_BYTES, redirect_target
from crawler.policy.robotsgroups import select
from crawler.policy.robotsmatch import Matcher, compiled, path_of
from crawler.policy.robotssignals import RobotsSignals, robots_signals

if TYPE_CHECKING:
    from collections.abc import Iterable

    from crawler.policy.contentsignals import Signals

# Departures from Google's reference parser, where RFC 9309 says otherwise (see
# docs/politeness.md and tests/unit/test_robots_reference.py): the URL is normalized
# like the rules before they are compared (RFC 9309 2.2.2: non-ASCII octets escaped;
# RFC 3986 6.2.2: escaped unreserved characters decoded, hex in upper case), so
# "/ツ" and "/%E3%83%84", "/%62az" and "/baz", are one path each; the reference
# normalizes the rules only and compares them with the URL as given.

# Sitemaps one robots.txt may announce; a hostile file could list thousands.
MAX_SITEMAPS = 50
# What a file may start with and still be read as UTF-8 text: the byte order mark,
# or, as Google's parser allows, the first bytes of one.
_BOM_PREFIXES = (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef")


def robots_text(body: bytes) -> tuple[str, bool]:
    """The text to parse, and whether *body* was cut to ``MAX_BYTES``.

    A cut file loses its last, partial line; a leading byte order mark (whole or
    partial) goes; bytes that are not UTF-8 become U+FFFD.
    """
    truncated = len(body) > MAX_BYTES
    if truncated:
        body = body[:MAX_BYTES]
        end = max(body.rfind(b"\n"), body.rfind(b"\r"))
        if end >= 0:
            body = body[: end + 1]
    for prefix in _BOM_PREFIXES:
        if body.startswith(prefix):
            body = body[len(prefix) :]
            break
    return body.decode("utf-8", errors="replace"), truncated


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """A parsed robots.txt, as it applies to one product token (*user_agent*).

    *matcher* holds the rules selected for the token, *signals* the content signal
    rules of the same groups.
    """

    matcher: Matcher
    user_agent: str
    crawl_delay: float | None
    sitemaps: tuple[str, ...]
    signals: RobotsSignals

    def allows(self, url: str) -> bool:
        try:
            path = path_of(url)
        except ValueError:  # a URL that cannot be split; the downloader will refuse it
            return True
        return self.matcher.allows(path)

    def signals_for(self, url: str) -> Signals:
        """The content signals the file states for *url* (empty: none)."""
        if not self.signals.rules:
            return {}
        try:
            path = path_of(url)
        except ValueError:
            return {}
        return self.signals.for_path(path)


def parse_rules(text: str, *, user_agent: str, base_url: str) -> RobotsRules | None:
    """The rules of *text* for *user_agent*; None if it cannot be parsed at all.

    Lines that cannot be read are skipped, as RFC 9309 2.2 asks ("parsers MUST
    ignore" them), so this is about a failure of the parsers themselves. Nothing
    parsed means nothing restricted: the caller treats None as no restrictions and
    counts it.
    """
    try:
        selection = select(text, user_agent)
        matcher = compiled(selection.rules)
        sitemaps = sitemap_urls(selection.sitemaps, base_url)
        signals = robots_signals(selection.signals)
    except Exception:  # noqa: BLE001 (hostile input: the caller counts and logs it)
        return None
    return RobotsRules(matcher, user_agent, selection.crawl_delay, sitemaps, signals)


def sitemap_urls(values: Iterable[str], base_url: str) -> tuple[str, ...]:
    """The distinct http(s) sitemap URLs among *values*, at most ``MAX_SITEMAPS``."""
    urls: dict[str, None] = {}
    for value in values:
        target = redirect_target(base_url, value)
        if target is not None:
            urls[target] = None
            if len(urls) >= MAX_SITEMAPS:
                break
    return tuple(urls)
