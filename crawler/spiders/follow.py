"""What the bfs spider follows from a response: ``BFS_FOLLOW = pages | resources``.

``pages`` (the default) follows what leads to other pages: ``<a>`` and ``<area>``
links, ``<frame>`` and ``<iframe>`` sources and ``<link>`` elements that are not
resources (``rel=next``, ``index``, ``alternate``...), as wget does; links to files
with one of Scrapy's ignored extensions (images, scripts, stylesheets, PDFs,
archives: ``scrapy.linkextractors.IGNORED_EXTENSIONS``) are counted, not followed.
``resources`` also follows those links and what pages embed (images, scripts,
stylesheets, media, objects), and reads the links of CSS files (``url()``,
``@import``) and XML files (SVG, feeds). Any other response is recorded only.

Every page is parsed once, with lexbor (crawler.links): its title and its links
come from that one tree. Of its links, those in scope and not yielded before at
that depth or shallower are followed (``new_links``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.http import TextResponse
from scrapy.linkextractors import IGNORED_EXTENSIONS

from crawler.links import (
    HtmlDocument,
    LinkExtractor,
    css_urls,
    navigation_links,
    page_resources,
    xml_urls,
)
from crawler.spiders.pagerecords import is_html, media_type

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from scrapy.http import Response

    from crawler.context.seencache import SeenCache
    from crawler.policy.scope import Scope

FOLLOW_MODES = ("pages", "resources")
# The tags and attributes of links to pages, as wget reads them.
PAGE_TAGS = ("a", "area", "frame", "iframe")
PAGE_ATTRS = ("href", "src")
CSS_TYPES = frozenset({"text/css"})
# XML read for links when following resources (XHTML is HTML: is_html).
XML_SUFFIX = "+xml"
XML_TYPES = frozenset({"text/xml", "application/xml"})
_RESOURCE_ENDINGS = tuple(f".{extension}" for extension in IGNORED_EXTENSIONS)


@dataclass(frozen=True, slots=True)
class Found:
    """What one response leads to."""

    title: str | None
    # Absolute http(s) URLs without fragment, each once, in document order.
    links: list[str]
    # Links to resources left alone (BFS_FOLLOW=pages).
    skipped: int = 0


class Follower:
    """Reads a response's title and the URLs it leads to, per ``BFS_FOLLOW``."""

    def __init__(self, mode: str) -> None:
        mode = mode.strip().lower()
        if mode not in FOLLOW_MODES:
            raise ValueError(
                f"BFS_FOLLOW must be one of {', '.join(FOLLOW_MODES)}; got {mode!r}"
            )
        self.resources = mode == "resources"
        self._extractor = LinkExtractor(
            tags=PAGE_TAGS, attrs=PAGE_ATTRS, deny_extensions=(), unique=False
        )

    def read(self, response: Response) -> Found | None:
        """The title and links of *response*, or None for a response whose links
        are not read (it is only recorded). Raises ``ValueError`` (and the like)
        only for a body that cannot be read."""
        kind = kind_of(response)
        if kind is None or (kind != "html" and not self.resources):
            return None
        # crawler.links gives these absolute, without fragment, each once.
        if kind == "css":
            return Found(None, css_urls(_text(response), response.url))
        if kind == "xml":
            return Found(None, xml_urls(response.body, response.url))
        assert isinstance(response, TextResponse)  # is_html
        document = HtmlDocument.from_response(response)
        urls = [link.url for link in self._extractor.extract_links(document)]
        urls += navigation_links(document)
        if self.resources:
            return Found(document.title, _unique(urls + page_resources(document)))
        pages = _unique(urls)
        kept = [url for url in pages if not is_resource(url)]
        return Found(document.title, kept, skipped=len(pages) - len(kept))


def kind_of(response: Response) -> str | None:
    """``html``, ``css``, ``xml`` (SVG, feeds, any other XML), or None for a
    response whose links are never read (images, PDFs, plain text, JSON...)."""
    if is_html(response):
        return "html"
    media = media_type(response)
    if media in CSS_TYPES:
        return "css"
    if media in XML_TYPES or media.endswith(XML_SUFFIX):
        return "xml"
    return None


def is_resource(url: str) -> bool:
    """Whether *url* names a file with one of Scrapy's ignored extensions (its
    path's last segment; the query does not count)."""
    name = url.partition("?")[0].rpartition("/")[2].lower()
    return name.endswith(_RESOURCE_ENDINGS)


def _text(response: Response) -> str:
    if isinstance(response, TextResponse):
        return response.text
    return response.body.decode("utf-8", "replace")


def _unique(urls: Iterable[str]) -> list[str]:
    """*urls* without fragments, each once, in order."""
    return list(dict.fromkeys(url.partition("#")[0] for url in urls))


def new_links(
    urls: Sequence[str],
    depth: int,
    yielded: SeenCache,
    scope: Scope,
    known: list[str] | None = None,
) -> tuple[int, list[str]]:
    """How many of *urls* are in scope, and those not yielded before at
    *depth* or shallower (the frontier still decides for each one yielded);
    the others in scope are added to *known*, if given (importance order
    counts them as in-links).

    A page links to ~100 URLs, nearly all yielded before: a cache lookup
    instead of a request through the middlewares to the frontier's seen
    check. Only URLs in scope are remembered, so a known one needs no scope
    check.
    """
    in_scope, new = 0, []
    for url in urls:
        seen_at = yielded.depth_of(url)
        if seen_at is None and not scope.allows(url):
            continue
        in_scope += 1
        if seen_at is None or seen_at > depth:
            yielded.add(url, depth)
            new.append(url)
        elif known is not None:
            known.append(url)
    return in_scope, new
