"""Turning an attribute value into an absolute URL exactly as Scrapy's extractor does.

Scrapy's ``LxmlParserLinkExtractor`` runs every value through
``urljoin(base_url, value)``, ``safe_url_string(url, encoding)`` and
``urljoin(response_url, url)``: about 25 CPU µs a link here, most of a page's cost.
`UrlResolver` gives the same result in a microsecond or two for the values that make up
nearly all real links: relative references (``"../os.html#path"``, ``"#top"``, ``"?q=1"``)
made of characters that ``safe_url_string`` leaves alone, against an http(s) base URL
of such characters. For those the three calls reduce to RFC 3986 merging (copied
from ``urllib.parse.urljoin``, quirks included) with nothing to quote; every other
value takes the slow path, which calls Scrapy's own helpers. The unit tests check the
fast path against the slow one on generated values.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlparse, urlsplit

from w3lib.url import safe_url_string

if TYPE_CHECKING:
    from collections.abc import Callable

# Characters safe_url_string keeps as they are in a path, a query and a fragment,
# minus ":" (a scheme before it), ";" (urlparse's params) and "'" (quoted in the
# query of special schemes). "#" and "?" delimit; a second "#" would be quoted.
_PATH = r"[A-Za-z0-9\-._~!$&()*+,=@/%]*"
_TAIL = r"[A-Za-z0-9\-._~!$&()*+,=@/%?:]*"
_PLAIN_REFERENCE = re.compile(rf"({_PATH})(?:\?({_TAIL}))?(?:#({_TAIL}))?")
_LABEL = r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?"
# A port of 1 to 65535 (a test site's, say 41234, as much as 8080).
_PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_PLAIN_HOST = re.compile(rf"{_LABEL}(?:\.{_LABEL})*(?::{_PORT})?")
# An absolute http(s) URL with a non-empty host (urlsplit's netloc).
_ABSOLUTE_WITH_HOST = re.compile(r"https?://[^/?#\t\n\r]")
_ASCII_PROBE = "azAZ09-._~!$&()*+,=@/%?:"


# An absolute URL, its netloc and its path (as ``urlparse`` gives them): the parts
# the extractor's filters read. A plain tuple: a NamedTuple costs more to build.
ResolvedUrl = tuple[str, str, str]


@functools.lru_cache(maxsize=64)
def _ascii_compatible(encoding: str) -> bool:
    """Whether *encoding* writes ASCII as ASCII (UTF-16 does not: a query quoted
    in it is not the query's ASCII text)."""
    try:
        return _ASCII_PROBE.encode(encoding) == _ASCII_PROBE.encode("ascii")
    except (LookupError, UnicodeError):
        return False


def _scheme(url: str) -> str:
    """``urlsplit(url).scheme``."""
    return urlsplit(url).scheme


def slow_resolve(
    value: str, base_url: str, response_url: str, encoding: str
) -> str | None:
    """Scrapy's own chain (``process_value`` aside); None where Scrapy skips."""
    try:
        url = urljoin(base_url, value)
    except ValueError:
        return None
    return finish(url, response_url, encoding)


def finish(url: Any, response_url: str, encoding: str) -> str | None:
    """The steps after ``process_value``: quoting, then joining with the response
    URL (which undoes a relative URL that ``process_value`` returned)."""
    try:
        safe: str = safe_url_string(url, encoding=encoding)
    except ValueError:
        return None
    return urljoin(response_url, safe)


def processed(
    value: str,
    process: Callable[[Any], Any],
    base_url: str,
    response_url: str,
    encoding: str,
) -> ResolvedUrl | None:
    """Scrapy's chain with ``process_value`` between the two joins; what
    ``process_value`` raises propagates, as in Scrapy."""
    try:
        joined = urljoin(base_url, value)
    except ValueError:
        return None
    url = process(joined)
    if url is None:
        return None
    resolved = finish(url, response_url, encoding)
    return None if resolved is None else slow_parts(resolved)


def slow_parts(url: str) -> ResolvedUrl:
    """*url* with the parts ``urlparse`` gives the filters."""
    parsed = urlparse(url)
    return (url, parsed.netloc, parsed.path)


# What `UrlResolver.known` gives for a value not resolved yet (compared by identity).
UNKNOWN: ResolvedUrl = ("", "", "")

# Merges shared by the pages one extractor reads: (origin and base directory, or
# origin alone for an absolute path, or the schemes and encoding for an absolute
# URL; reference) -> URL. Bounded: cleared when full.
SharedMerges = dict[tuple[str, str], ResolvedUrl | None]
SHARED_MERGES_LIMIT = 20_000  # a few MB at most


class UrlResolver:
    """Resolves attribute values of one page against its base URL."""

    __slots__ = (
        "_base_parts", "_base_url", "_directory", "_encoding", "_fast", "_netloc",
        "_path", "_prefix", "_query", "_response_url", "_shared", "_shared_key", "known",
    )  # fmt: skip

    def __init__(
        self,
        base_url: str,
        response_url: str,
        encoding: str,
        shared: SharedMerges | None = None,
    ) -> None:
        self._base_url = base_url
        self._response_url = response_url
        self._encoding = encoding
        self._fast = False
        # Values resolved so far (a page repeats a third of its links).
        self.known: dict[str, ResolvedUrl | None] = {}
        self._shared = shared
        self._setup_fast_path()

    def _setup_fast_path(self) -> None:
        """Enable the fast path when the base URL is plain http(s), so that every
        URL built from it needs no quoting and keeps its scheme and host."""
        base = self._base_url
        scheme, sep, rest = base.partition("://")
        if scheme not in ("http", "https") or not sep:
            return
        if not _ascii_compatible(self._encoding):
            return
        if not self._response_url.startswith(("http://", "https://")):
            return
        netloc, slash, tail = rest.partition("/")
        if not slash or not _PLAIN_HOST.fullmatch(netloc):
            return
        match = _PLAIN_REFERENCE.fullmatch("/" + tail)
        if match is None or safe_url_string(base) != base:
            return
        path, query, _fragment = match.groups()
        if (query is not None and not query) or (
            _fragment is not None and not _fragment
        ):
            return
        self._prefix = f"{scheme}://{netloc}"
        self._netloc = netloc
        self._path = path
        self._query = query or ""
        parts = path.split("/")
        if parts[-1] != "":
            del parts[-1]
        self._base_parts = parts
        # The merged directory, when the base has no dot segment to remove.
        plain = "." not in parts and ".." not in parts
        self._directory = "/".join(["", *filter(None, parts)]) + "/" if plain else ""
        self._shared_key = f"{self._prefix}{'/'.join(parts)}"
        self._fast = True

    def resolve(self, value: str) -> ResolvedUrl | None:
        """The absolute URL of *value* (already stripped if asked), or None where
        Scrapy would skip it. Memoized: a page repeats a third of its links."""
        resolved = self.known.get(value, UNKNOWN)
        if resolved is UNKNOWN:
            resolved = self.known[value] = self._resolve(value)
        return resolved

    def _resolve(self, value: str) -> ResolvedUrl | None:
        if self._fast and not value.startswith("//"):
            if not value:
                return (self._base_url, self._netloc, self._path)
            match = _PLAIN_REFERENCE.fullmatch(value)
            if match is not None:
                if self._shared is None or value[0] in "?#":
                    return self._merge(*match.groups())
                return self._shared_merge(value, match)
        if self._shared is not None and _ABSOLUTE_WITH_HOST.match(value):
            return self._shared_absolute(value)
        return self._slow(value)

    def _slow(self, value: str) -> ResolvedUrl | None:
        url = slow_resolve(value, self._base_url, self._response_url, self._encoding)
        return None if url is None else slow_parts(url)

    def _shared_absolute(self, value: str) -> ResolvedUrl | None:
        """`_slow` through the cache shared by pages: an absolute URL with a host
        resolves the same under every base, given the schemes of the base and
        response URLs (urljoin keeps or rebuilds it), the response host and the
        page encoding."""
        assert self._shared is not None
        response = urlsplit(self._response_url)
        context = [_scheme(self._base_url), response.scheme, response.netloc]
        # The response host too: quoting can empty a host ("http://:/x"), and
        # urljoin then takes the response's.
        key = (f"absolute {' '.join(context)} {self._encoding}", value)
        resolved = self._shared.get(key, UNKNOWN)
        if resolved is UNKNOWN:
            resolved = self._slow(value)
            self._remember(key, resolved)
        return resolved

    def _remember(self, key: tuple[str, str], resolved: ResolvedUrl | None) -> None:
        assert self._shared is not None
        if len(self._shared) >= SHARED_MERGES_LIMIT:
            self._shared.clear()
        self._shared[key] = resolved

    def _shared_merge(self, value: str, match: re.Match[str]) -> ResolvedUrl:
        """`_merge` through the cache shared by pages: a reference with a path
        gives the same URL under every base of the same origin and directory."""
        assert self._shared is not None
        key = (self._prefix if value[0] == "/" else self._shared_key, value)
        resolved = self._shared.get(key)
        if resolved is None:
            resolved = self._merge(*match.groups())
            self._remember(key, resolved)
        return resolved

    def _merge(self, path: str, query: str | None, fragment: str | None) -> ResolvedUrl:
        """``urljoin``'s merge for a plain reference; urlunparse drops an empty
        query or fragment, as the result of ``urljoin`` does."""
        if not path:
            if not query:
                query = self._query
            resolved = self._path
        elif path[0] == "/":
            resolved = _remove_dot_segments(path.split("/"))
        elif (
            self._directory and path[0] != "." and "/." not in path and "//" not in path
        ):
            resolved = self._directory + path  # no segment to drop or resolve
        else:
            segments = self._base_parts + path.split("/")
            segments[1:-1] = filter(None, segments[1:-1])
            resolved = _remove_dot_segments(segments)
        url = self._prefix + resolved
        if query:
            url = f"{url}?{query}"
        if fragment:
            url = f"{url}#{fragment}"
        return (url, self._netloc, resolved)


def _remove_dot_segments(segments: list[str]) -> str:
    """``urljoin``'s dot-segment removal, with ``urlunparse``'s leading slash."""
    if "." not in segments and ".." not in segments:
        resolved = "/".join(segments)
    else:
        kept: list[str] = []
        for segment in segments:
            if segment == "..":
                if kept:
                    kept.pop()
            elif segment != ".":
                kept.append(segment)
        if segments[-1] in (".", ".."):
            kept.append("")
        resolved = "/".join(kept)
    if not resolved:
        return "/"
    return resolved if resolved[0] == "/" else "/" + resolved
