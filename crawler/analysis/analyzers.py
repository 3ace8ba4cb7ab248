"""The analyzer interface and the two shipped analyzers.

An analyzer is a class with a no-argument constructor and one method::

    class MyAnalyzer:
        def analyze(self, page: bytes, record: Mapping[str, Any]) -> dict[str, Any]:
            ...

*page* is the stored body, byte for byte; *record* is the page's record as the
crawl wrote it (``url``, ``status``, ``content_type``, ``host``... see
``crawler.items.PageRecord``; no body). It returns a JSON-serializable dict, written
by the worker as the task's result. Raising fails the attempt (the task is retried,
then dead-lettered). One instance serves every task of a worker process, one task at
a time.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urljoin

from parsel import Selector
from w3lib.encoding import html_to_unicode

from crawler.policy.hosts import BadURLError, host_of, registered_domain

if TYPE_CHECKING:
    from collections.abc import Mapping

# Elements whose text is not the page's own: left out of the main text.
NOT_TEXT = "head, script, style, noscript, template, nav, header, footer, aside, form"
# Longest main text kept in a result, in characters.
MAX_TEXT = 200_000
# External domains listed in an outlinks summary.
TOP_DOMAINS = 10
_SPACES = re.compile(r"\s+")


class Analyzer(Protocol):
    """What ``scrapy analyze`` runs for a task (see the module's docstring)."""

    def analyze(self, page: bytes, record: Mapping[str, Any]) -> dict[str, Any]: ...


def page_selector(page: bytes, record: Mapping[str, Any]) -> Selector:
    """*page* parsed as HTML, decoded by its Content-Type, BOM or meta charset."""
    content_type = record.get("content_type")
    header = content_type if isinstance(content_type, str) else None
    _encoding, text = html_to_unicode(header, page)
    return Selector(text=text or "<html></html>", type="html")


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


class TextAnalyzer:
    """Title, headings (h1 to h6, in document order) and main text of an HTML page.

    The main text is that of ``<main>``, else ``<article>``, else ``<body>``, with
    the head, scripts, styles, navigation, headers, footers, asides and forms left
    out.
    """

    def analyze(self, page: bytes, record: Mapping[str, Any]) -> dict[str, Any]:
        selector = page_selector(page, record)
        title = _clean(" ".join(selector.xpath("//title//text()").getall()))
        headings = [
            {"level": int(node.root.tag[1]), "text": _clean(text)}
            for node in selector.xpath("//h1|//h2|//h3|//h4|//h5|//h6")
            if (text := " ".join(node.xpath(".//text()").getall())).strip()
        ]
        selector.css(NOT_TEXT).drop()
        for area in ("main", "article", "body", "html"):
            if found := selector.css(area):
                text = _clean(" ".join(found[0].xpath(".//text()").getall()))
                break
        else:
            text = ""
        return {
            "title": title or None,
            "headings": headings,
            "text": text[:MAX_TEXT],
            "text_truncated": len(text) > MAX_TEXT,
            "words": len(text.split()),
        }


class OutlinksAnalyzer:
    """A summary of a page's links: how many, internal (same host) or external,
    other schemes (``mailto:``...), and the most linked external domains."""

    def analyze(self, page: bytes, record: Mapping[str, Any]) -> dict[str, Any]:
        url = str(record.get("url") or "")
        selector = page_selector(page, record)
        base = selector.xpath("//base/@href").get() or ""
        try:
            base = urljoin(url, base.strip())
            own_host = host_of(base)
        except ValueError:
            own_host = ""
        hrefs = selector.xpath("//a/@href").getall()
        internal = external = other = 0
        domains: Counter[str] = Counter()
        for href in hrefs:
            try:
                target = urljoin(base, href.strip())
                host = host_of(target) if target.startswith(("http:", "https:")) else ""
            except (ValueError, BadURLError):
                host = ""
            if not host:
                other += 1
            elif host == own_host:
                internal += 1
            else:
                external += 1
                domains[registered_domain(host)] += 1
        return {
            "links": len(hrefs),
            "internal": internal,
            "external": external,
            "other": other,
            "external_domains": len(domains),
            "top_external_domains": [
                {"domain": domain, "links": count}
                for domain, count in domains.most_common(TOP_DOMAINS)
            ],
        }
