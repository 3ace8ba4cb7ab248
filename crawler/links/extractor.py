"""A drop-in for Scrapy's ``LinkExtractor`` that reads a lexbor tree.

It returns the links Scrapy's ``LxmlLinkExtractor`` returns for the same options
(url, text, nofollow, order, duplicates), at about a fifth of the cost: one lexbor
parse shared with the page's title and resources, and `UrlResolver`'s fast path
for plain relative URLs. Tested against Scrapy's on hand-written and generated
pages and on three real documentation sites.

Where it differs on purpose:

- ``restrict_xpaths`` is refused (lexbor has no XPath); use ``restrict_css``.
  ``restrict_css`` is evaluated by lexbor's CSS engine, not by parsel's
  translation to XPath: the common selectors (type, class, id, attribute,
  descendant, child, ``:not``, ``:nth-child``) select the same elements.
- The tree is built by the HTML5 algorithm, libxml2's is not. Well-formed pages
  give the same tree; on broken markup the trees, and so a link's text or
  presence, can differ where libxml2's recovery departs from what browsers build.
  Seen on real pages (PostgreSQL's docs): an ``<a>`` inside another ``<a>``.
  HTML5 closes the outer link where the inner one starts, libxml2 nests them, so
  the outer link's text differs (its URL and place do not).
- Markup after ``</html>`` is read: HTML5 puts it in the body, where browsers
  show it; libxml2 puts it in a second root element that Scrapy's extractor
  never walks (SQLite's "last modified" links).
- A ``<base href>`` Scrapy cannot read (a bad port; a character the page encoding
  lacks) is ignored, as browsers ignore it, where Scrapy raises ValueError.
- Links inside ``<template>`` are not extracted: the HTML5 parser keeps template
  content out of the document (it is inert, a browser does not show or follow
  it); libxml2 parses it as ordinary markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.link import Link
from scrapy.utils.misc import arg_to_iter, rel_has_nofollow
from w3lib.url import canonicalize_url

from crawler.links.document import HtmlDocument
from crawler.links.filters import VALID_PREFIXES, LinkFilter, first_of_each, link_url
from crawler.links.resolve import (
    UNKNOWN,
    ResolvedUrl,
    SharedMerges,
    UrlResolver,
    processed,
)
from crawler.links.selectors import LOWER_NAME, checked_selectors, selector_for

if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterable

    from scrapy.http import TextResponse
    from selectolax.lexbor import LexborNode

    Regexes = str | re.Pattern[str] | Iterable[str | re.Pattern[str]] | None

_HTML5_WHITESPACE = " \t\n\r\x0c"
# HTML 4 boolean attributes: libxml2 gives them their name as value when valueless.
_LIBXML2_BOOLEAN_ATTRIBUTES = frozenset({
    "checked", "compact", "declare", "defer", "disabled", "ismap", "multiple",
    "nohref", "noresize", "noshade", "nowrap", "readonly", "selected",
})  # fmt: skip

# A candidate link before filtering: its URL and its element.
_Candidate = tuple[ResolvedUrl, "LexborNode"]


def _names(value: str | Iterable[str] | None) -> frozenset[str]:
    return frozenset(arg_to_iter(value))


class LinkExtractor:
    """Scrapy's ``LinkExtractor`` options and results, on an `HtmlDocument`."""

    def __init__(  # noqa: PLR0913, PLR0917 (Scrapy's signature)
        self,
        allow: Regexes = (),
        deny: Regexes = (),
        allow_domains: str | Iterable[str] = (),
        deny_domains: str | Iterable[str] = (),
        restrict_xpaths: str | Iterable[str] = (),
        tags: str | Iterable[str] | None = ("a", "area"),
        attrs: str | Iterable[str] | None = ("href",),
        canonicalize: bool = False,
        unique: bool = True,
        process_value: Callable[[Any], Any] | None = None,
        deny_extensions: str | Iterable[str] | None = None,
        restrict_css: str | Iterable[str] = (),
        strip: bool = True,
        restrict_text: Regexes = None,
        deny_tags: str | Iterable[str] = (),
        deny_attrs: str | Iterable[str] = (),
    ) -> None:
        if tuple(arg_to_iter(restrict_xpaths)):
            raise ValueError(
                "restrict_xpaths is not supported by crawler.links.LinkExtractor "
                "(lexbor has no XPath): use restrict_css"
            )
        self._tags, self._deny_tags = _names(tags), _names(deny_tags)
        self._attrs, self._deny_attrs = _names(attrs), _names(deny_attrs)
        self._tag_selector = selector_for(
            self._tags - self._deny_tags, self._attrs - self._deny_attrs
        )
        self._single_attr = self._single_attribute()
        self._attribute_in_selector = (
            self._single_attr is not None
            and f"[{self._single_attr}]" in self._tag_selector
        )
        # Lower-case names select exactly the elements Scrapy's names match.
        self._selector_is_exact = self._tag_selector != "*" and all(
            LOWER_NAME.fullmatch(tag) for tag in self._tags
        )
        self._filter = LinkFilter.from_options(
            allow=allow,
            deny=deny,
            allow_domains=allow_domains,
            deny_domains=deny_domains,
            deny_extensions=deny_extensions,
            restrict_text=restrict_text,
        )
        self._restrict_css = checked_selectors(restrict_css)
        self._canonicalize = canonicalize
        self._unique = unique
        self._process_value = process_value
        self._strip = strip
        self._shared_merges: SharedMerges = {}

    def _single_attribute(self) -> str | None:
        """The one attribute name read, when there is exactly one (the common case)."""
        if len(self._attrs) == 1 and "*" not in self._attrs:
            (name,) = self._attrs
            return None if name in self._deny_attrs else name
        return None

    def extract_links(self, source: TextResponse | HtmlDocument) -> list[Link]:
        """The links of *source* that the options allow, in document order."""
        document = (
            source
            if isinstance(source, HtmlDocument)
            else HtmlDocument.from_response(source)
        )
        if not self._tag_selector or (not self._attrs):
            return []
        resolver = UrlResolver(
            document.base_url, document.url, document.encoding, self._shared_merges
        )
        if not self._restrict_css:
            root = document.tree.root
            if root is None:
                return []
            return self._process(self._candidates(root, document, resolver))
        links: list[Link] = []
        for selector in self._restrict_css:
            for region in document.select(selector):
                links += self._process(self._candidates(region, document, resolver))
        return first_of_each(links, link_url) if self._unique else links

    def _elements(self, region: LexborNode) -> list[LexborNode]:
        """The candidate elements in *region* (itself included), in document order."""
        nodes = region.css(self._tag_selector)
        if self._selector_is_exact:
            return nodes
        tags, deny = self._tags, self._deny_tags
        if "*" in tags:
            return [n for n in nodes if n.tag not in deny] if deny else nodes
        return [n for n in nodes if n.tag in tags and n.tag not in deny]

    def _attribute_values(self, node: LexborNode, single: str | None) -> list[str]:
        """The scanned attribute values of *node*, in source order."""
        attributes = node.attributes
        if single is not None:
            value = attributes.get(single, False)
            if value is False:
                return []
            return [_valueless(single) if value is None else value]  # type: ignore[list-item]
        attrs, deny, any_attr = self._attrs, self._deny_attrs, "*" in self._attrs
        return [
            _valueless(name) if value is None else value
            for name, value in attributes.items()
            if (any_attr or name in attrs) and name not in deny
        ]

    def _candidates(
        self, region: LexborNode, document: HtmlDocument, resolver: UrlResolver
    ) -> list[_Candidate]:
        """Each scanned attribute value that resolves, with its element."""
        if self._attribute_in_selector and self._process_value is None:
            return self._single_candidates(region, resolver)
        candidates: list[_Candidate] = []
        strip, process, single = self._strip, self._process_value, self._single_attr
        for node in self._elements(region):
            for raw in self._attribute_values(node, single):
                value = raw.strip(_HTML5_WHITESPACE) if strip else raw
                if process is None:
                    parts = resolver.resolve(value)
                else:
                    parts = processed(
                        value,
                        process,
                        document.base_url,
                        document.url,
                        document.encoding,
                    )
                if parts is not None:
                    candidates.append((parts, node))
        return candidates

    def _single_candidates(
        self, region: LexborNode, resolver: UrlResolver
    ) -> list[_Candidate]:
        """`_candidates` for the common case: one attribute, which the selector
        guarantees, and no ``process_value`` (the hot loop of a crawl)."""
        candidates: list[_Candidate] = []
        append = candidates.append
        name = self._single_attr or ""
        valueless = _valueless(name)
        strip, resolve, known = self._strip, resolver.resolve, resolver.known
        for node in self._elements(region):
            value = node.attrs.get(name)
            if value is None:
                value = valueless
            elif strip:
                value = value.strip(_HTML5_WHITESPACE)
            parts = known.get(value, UNKNOWN)
            if parts is UNKNOWN:
                parts = resolve(value)
            if parts is not None:
                append((parts, node))
        return candidates

    def _process(self, candidates: list[_Candidate]) -> list[Link]:
        """Scrapy's order of steps: dedupe, filter, canonicalize, dedupe.

        The first dedupe runs in the loop: a URL seen once is skipped after, even
        when the filter dropped its first link, as Scrapy's dedupe before
        filtering does. The last is needed only when canonicalizing changed URLs.
        """
        links: list[Link] = []
        append = links.append
        link_filter = self._filter
        allowed = None if link_filter.only_scheme_and_extensions else link_filter.allows
        extensions = link_filter.deny_extensions
        seen: set[str] | None = set() if self._unique else None
        for parts, node in candidates:
            url = parts[0]
            if seen is not None:
                if url in seen:
                    continue
                seen.add(url)
            text = node.text(deep=True)
            if allowed is None:  # the default options, inlined
                if not url.startswith(VALID_PREFIXES) or parts[2].lower().endswith(
                    extensions
                ):
                    continue
            elif not allowed(parts, text):
                continue
            rel = node.attrs.get("rel")
            append(Link(url, text, nofollow=rel is not None and rel_has_nofollow(rel)))
        if not self._canonicalize:
            return links
        for link in links:
            link.url = canonicalize_url(link.url)
        return first_of_each(links, link_url) if self._unique else links


def _valueless(name: str) -> str:
    """The value libxml2 (so Scrapy) gives an attribute written without one."""
    return name if name in _LIBXML2_BOOLEAN_ATTRIBUTES else ""
