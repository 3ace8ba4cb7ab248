"""crawler.links against Scrapy on real sites: Debian's HTML documentation.

Every .html page of each installed corpus, as an ``HtmlResponse`` whose URL on a
loopback host mirrors its path: our links must equal Scrapy's LinkExtractor's for
the default options and for frames, iframes and src attributes too, and our title
must equal ``response.css("title::text").get()``. Nothing is fetched.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor as ScrapyLinkExtractor

from crawler.links import HtmlDocument, LinkExtractor

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.link import Link

pytestmark = pytest.mark.integration

# Root folder of each corpus and the loopback host its URLs get.
CORPORA = {
    "python": (Path("/usr/share/doc/python3.11/html"), "127.0.0.2"),
    "postgresql": (Path("/usr/share/doc/postgresql-doc-15/html"), "127.0.0.3"),
    "sqlite": (Path("/usr/share/doc/sqlite3"), "127.0.0.4"),
}
OPTIONS = [
    {},
    {"tags": ("a", "area", "frame", "iframe"), "attrs": ("href", "src")},
]


def _responses(root: Path, host: str) -> Iterator[HtmlResponse]:
    """Each page as Scrapy would receive it (encoding read from the page), one at
    a time: a response keeps its lxml tree, and thousands of them would swell the
    test process (and the peak RSS its crawl subprocesses report)."""
    for path in sorted(root.rglob("*.html")):
        if path.is_file():
            url = f"http://{host}/{path.relative_to(root).as_posix()}"
            yield HtmlResponse(url, body=path.read_bytes())


def _scrapys_links(response: HtmlResponse, options: dict[str, object]) -> list[Link]:
    """Scrapy's links, plus Scrapy's links of what follows ``</html>``.

    libxml2 puts markup after ``</html>`` into a second root element that Scrapy's
    extractor never walks (a "last modified" link on some SQLite pages); HTML5
    puts it in the body, where browsers show it, so ours reads it on purpose.
    """
    extractor = ScrapyLinkExtractor(**options)
    links = extractor.extract_links(response)
    end = response.text.lower().rfind("</html>")
    tail = response.text[end + len("</html>") :] if end >= 0 else ""
    if "<" in tail:
        trailing = HtmlResponse(response.url, body=tail.encode(), encoding="utf-8")
        seen = {link.url for link in links}
        links += [x for x in extractor.extract_links(trailing) if x.url not in seen]
    return links


def _nested_anchor_urls(response: HtmlResponse) -> set[str]:
    """Targets of <a> elements that hold another <a> (invalid HTML), and of the
    inner ones: HTML5 closes the outer one where the inner one starts, libxml2
    nests them, so the outer link's text differs (on purpose; see
    crawler.links.extractor)."""
    nested = ScrapyLinkExtractor(restrict_xpaths="//a[.//a]", deny_extensions=[])
    return {link.url for link in nested.extract_links(response)}


def _same(ours: list[Link], expected: list[Link], text_may_differ: set[str]) -> bool:
    if [(x.url, x.nofollow) for x in ours] != [(x.url, x.nofollow) for x in expected]:
        return False
    return all(
        a.text == b.text or a.url in text_may_differ
        for a, b in zip(ours, expected, strict=True)
    )


def _differences(response: HtmlResponse, extractors: list[LinkExtractor]) -> list[str]:
    """What our one parse gives that Scrapy does not, described for the report.
    *extractors* serve every page, as in a crawl (they share merges across pages)."""
    document = HtmlDocument.from_response(response)
    found = []
    expected_title = response.css("title::text").get()
    if document.title != expected_title:
        found.append(f"title {document.title!r} != {expected_title!r}")
    for options, extractor in zip(OPTIONS, extractors, strict=True):
        expected = _scrapys_links(response, options)
        ours = extractor.extract_links(document)
        if ours != expected and not _same(
            ours, expected, _nested_anchor_urls(response)
        ):
            missing = [x for x in expected if x not in ours][:2]
            extra = [x for x in ours if x not in expected][:2]
            found.append(f"{options}: missing {missing}, extra {extra}")
    return found


@pytest.mark.parametrize("corpus", list(CORPORA))
def test_links_and_titles_equal_scrapys_on_every_page(corpus: str):
    root, host = CORPORA[corpus]
    # The directory alone may exist without the docs (the sqlite3 package makes
    # /usr/share/doc/sqlite3): the corpus is its HTML pages.
    if not root.is_dir() or next(root.rglob("*.html"), None) is None:
        pytest.skip(f"{root} has no HTML (apt-get install the {corpus} docs)")
    extractors = [LinkExtractor(**options) for options in OPTIONS]
    pages, failures = 0, {}
    for response in _responses(root, host):
        pages += 1
        if differences := _differences(response, extractors):
            failures[response.url] = differences
    assert pages, f"no .html page under {root}"
    assert not failures, f"{len(failures)} of {pages} pages differ: " + str(
        dict(list(failures.items())[:3])
    )
