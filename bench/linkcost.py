"""CPU cost of reading a page's title and links, on Debian's HTML documentation.

``python -m bench.linkcost [--pages N] [--repeat R]`` builds, for each installed
corpus (Python, PostgreSQL, SQLite docs), up to N pages as ``HtmlResponse`` objects
with loopback URLs mirroring their paths, and times each way of reading them, in
CPU ms a page (``time.process_time``, best of R runs; every run gets fresh
responses, so decoding the body is counted everywhere):

- ``scrapy``: Scrapy's ``LinkExtractor().extract_links`` + ``response.css("title::text")``
  (lxml parse, as a Scrapy spider does it);
- ``lxml raw``: ``lxml.html.fromstring`` + ``iter("a", "area")`` + ``urljoin``: the floor
  for an lxml-based extractor without Scrapy's URL handling;
- ``ours``: ``HtmlDocument.from_response`` + ``.title`` + ``LinkExtractor().extract_links``
  (one lexbor parse, the same links as Scrapy's; one extractor for all the pages
  of a run, as in a crawl, built afresh for each run);
- ``ours+resources``: the same plus ``navigation_links`` and ``page_resources``.

It prints a table with links a page and ratios to ``scrapy``. Nothing is fetched.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

import lxml.html
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor as ScrapyLinkExtractor

from crawler.links import HtmlDocument, LinkExtractor, navigation_links, page_resources

CORPORA = {
    "python": (Path("/usr/share/doc/python3.11/html"), "127.0.0.2"),
    "postgresql": (Path("/usr/share/doc/postgresql-doc-15/html"), "127.0.0.3"),
    "sqlite": (Path("/usr/share/doc/sqlite3"), "127.0.0.4"),
}


def pages(root: Path, host: str, count: int) -> list[tuple[str, bytes]]:
    """(url, body) of the first *count* pages of a corpus, in path order."""
    paths = [p for p in sorted(root.rglob("*.html")) if p.is_file()][:count]
    return [
        (f"http://{host}/{p.relative_to(root).as_posix()}", p.read_bytes())
        for p in paths
    ]


Way = Callable[[HtmlResponse], int]


def scrapy_way() -> Way:
    extractor = ScrapyLinkExtractor()

    def read(response: HtmlResponse) -> int:
        response.css("title::text").get()
        return len(extractor.extract_links(response))

    return read


def lxml_raw_way() -> Way:
    def read(response: HtmlResponse) -> int:
        tree = lxml.html.fromstring(response.body)
        tree.findtext(".//title")
        hrefs = (el.get("href") or "" for el in tree.iter("a", "area"))
        return sum(1 for href in hrefs if urljoin(response.url, href))

    return read


def ours_way() -> Way:
    extractor = LinkExtractor()

    def read(response: HtmlResponse) -> int:
        document = HtmlDocument.from_response(response)
        _ = document.title
        return len(extractor.extract_links(document))

    return read


def ours_resources_way() -> Way:
    extractor = LinkExtractor()

    def read(response: HtmlResponse) -> int:
        document = HtmlDocument.from_response(response)
        _ = document.title
        links = extractor.extract_links(document)
        return (
            len(links) + len(navigation_links(document)) + len(page_resources(document))
        )

    return read


# Each run builds its reader afresh: no cache warmed by an earlier run of the
# same pages (an extractor shares URL merges across the pages it reads).
WAYS: dict[str, Callable[[], Way]] = {
    "scrapy": scrapy_way,
    "lxml raw": lxml_raw_way,
    "ours": ours_way,
    "ours+resources": ours_resources_way,
}


def measure(
    bodies: list[tuple[str, bytes]], way: Callable[[], Way], repeat: int
) -> tuple[float, float]:
    """Best CPU ms a page over *repeat* runs, and URLs found a page."""
    best, found = float("inf"), 0
    for _ in range(repeat):
        responses = [HtmlResponse(url, body=body) for url, body in bodies]
        read = way()
        start = time.process_time()
        found = sum(read(response) for response in responses)
        best = min(best, time.process_time() - start)
    return best * 1000 / len(bodies), found / len(bodies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300, help="pages a corpus")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best is kept")
    args = parser.parse_args()
    print(
        f"{'corpus':<11} {'pages':>5} {'way':<15} {'ms/page':>8} {'urls/page':>9} {'x scrapy':>8}"
    )
    for name, (root, host) in CORPORA.items():
        if not root.is_dir():
            print(f"{name:<11} not installed ({root})")
            continue
        bodies = pages(root, host, args.pages)
        baseline = None
        for way_name, way in WAYS.items():
            cost, found = measure(bodies, way, args.repeat)
            baseline = baseline or cost
            print(
                f"{name:<11} {len(bodies):>5} {way_name:<15} {cost:>8.2f} "
                f"{found:>9.1f} {cost / baseline:>8.2f}"
            )


if __name__ == "__main__":
    main()
