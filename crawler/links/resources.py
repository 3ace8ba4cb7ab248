"""What a page embeds and what its ``<link>`` elements point to, as wget sees them.

Scrapy's ``LinkExtractor`` reads ``<a>`` and ``<area>``; wget also follows
``<link rel=next>`` and fetches a page's images, scripts, stylesheets and the
``url()`` targets of its CSS. These functions give the crawler the same, from the
`HtmlDocument` it already parsed. Every function returns absolute http(s) URLs
without fragment, each once, in document order, and never raises on hostile input.
URLs are made absolute as Scrapy's extractor makes them (base URL, page encoding).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from crawler.links.resolve import UrlResolver

if TYPE_CHECKING:
    from collections.abc import Iterable

    from selectolax.lexbor import LexborNode

    from crawler.links.document import HtmlDocument

_HTML5_WHITESPACE = " \t\n\r\x0c"

# rel tokens naming something the page uses rather than another page.
RESOURCE_RELS = frozenset({
    "stylesheet", "icon", "shortcut", "apple-touch-icon", "mask-icon", "preload",
    "modulepreload", "prefetch", "preconnect", "dns-prefetch", "manifest",
})  # fmt: skip
# Of those, the rels that name an origin to connect to, not a thing to fetch.
_ORIGIN_RELS = frozenset({"preconnect", "dns-prefetch"})

# Elements and the attributes that hold a URL the page embeds.
_EMBED_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "img": ("src",),
    "script": ("src",),
    "source": ("src",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "body": ("background",),
}
_SRCSET_ELEMENTS = frozenset({"img", "source"})
_RESOURCE_SELECTOR = ", ".join(
    [*_EMBED_ATTRIBUTES, "link[href]", "input[src]", "style", "[style]"]
)

_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_CSS_URL = re.compile(
    r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s"']*))\s*\)"""
    r"""|@import\s+(?:"([^"]*)"|'([^']*)')""",
    re.IGNORECASE,
)


class _UrlSet:
    """Absolute http(s) URLs without fragment, in first-seen order."""

    def __init__(self, resolver: UrlResolver) -> None:
        self._resolver = resolver
        self._urls: dict[str, None] = {}

    def add(self, value: str | None) -> None:
        if not value:
            return
        resolved = self._resolver.resolve(value.strip(_HTML5_WHITESPACE))
        if resolved is None:
            return
        url = resolved[0]
        if url.startswith(("http://", "https://")):
            self._urls[url.partition("#")[0]] = None

    def urls(self) -> list[str]:
        return list(self._urls)


def _resolver(document: HtmlDocument) -> UrlResolver:
    return UrlResolver(document.base_url, document.url, document.encoding)


def _rel_tokens(rel: str | None) -> set[str]:
    return set((rel or "").lower().split())


def navigation_links(document: HtmlDocument) -> list[str]:
    """``<link href>`` targets whose rel names no resource (next, prev, index,
    alternate, ...; a ``<link>`` without rel counts too): pages wget follows."""
    found = _UrlSet(_resolver(document))
    for node in document.tree.css("link[href]"):
        attributes = node.attributes
        if not _rel_tokens(attributes.get("rel")) & RESOURCE_RELS:
            found.add(attributes.get("href"))
    return found.urls()


def page_resources(document: HtmlDocument) -> list[str]:
    """What the page embeds: images (with srcset candidates), scripts, stylesheets
    and icons, media, embeds, objects, image inputs, body backgrounds and the CSS
    ``url()``/``@import`` targets of ``<style>`` blocks and ``style`` attributes."""
    found = _UrlSet(_resolver(document))
    for node in document.select(_RESOURCE_SELECTOR):
        _add_resources(node, found)
    return found.urls()


def _add_resources(node: LexborNode, found: _UrlSet) -> None:
    """Add the URLs that one element embeds."""
    tag = node.tag
    attributes = node.attributes
    for name in _EMBED_ATTRIBUTES.get(tag or "", ()):
        found.add(attributes.get(name))
    if tag in _SRCSET_ELEMENTS:
        for candidate in srcset_urls(attributes.get("srcset") or ""):
            found.add(candidate)
    elif tag == "link":
        rels = _rel_tokens(attributes.get("rel"))
        if rels & RESOURCE_RELS and not rels <= _ORIGIN_RELS:
            found.add(attributes.get("href"))
    elif tag == "input" and (attributes.get("type") or "").lower() == "image":
        found.add(attributes.get("src"))
    elif tag == "style":
        for target in _css_targets(node.text(deep=True) or ""):
            found.add(target)
    if "style" in attributes:
        for target in _css_targets(attributes.get("style") or ""):
            found.add(target)


def srcset_urls(srcset: str) -> list[str]:
    """The candidate URLs of a ``srcset`` value (HTML's parsing rules, simplified:
    a URL runs to whitespace, trailing commas dropped; descriptors skipped)."""
    urls: list[str] = []
    position, end = 0, len(srcset)
    while position < end:
        while position < end and srcset[position] in _HTML5_WHITESPACE + ",":
            position += 1
        start = position
        while position < end and srcset[position] not in _HTML5_WHITESPACE:
            position += 1
        url = srcset[start:position]
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            position = _skip_descriptors(srcset, position)
        if url:
            urls.append(url)
    return urls


def _skip_descriptors(srcset: str, position: int) -> int:
    """The position after the descriptors that start at *position* (a comma
    inside parentheses does not end them)."""
    depth = 0
    while position < len(srcset):
        char = srcset[position]
        position += 1
        if char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif char == "," and not depth:
            break
    return position


def _css_targets(text: str) -> Iterable[str]:
    """The raw ``url()`` and ``@import`` targets of a style sheet, in order."""
    if "url" not in text.lower() and "@import" not in text.lower():
        return []
    text = _CSS_COMMENT.sub(" ", text)
    return [
        next(g for g in m.groups() if g is not None) for m in _CSS_URL.finditer(text)
    ]


def css_urls(text: str, base_url: str) -> list[str]:
    """The ``url()`` and ``@import`` targets of a CSS file, absolute against
    *base_url* (the style sheet's own URL), http(s) only, without fragment, each
    once, in order."""
    found = _UrlSet(UrlResolver(base_url, base_url, "utf-8"))
    for target in _css_targets(text):
        found.add(target)
    return found.urls()
