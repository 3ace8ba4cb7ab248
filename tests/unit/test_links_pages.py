"""Page-level reads of crawler.links: titles, hostile bytes, navigation links,
embedded resources, CSS and XML URLs, against hand-written expectations."""

from __future__ import annotations

import random

import pytest
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor as ScrapyLinkExtractor

from crawler.links import (
    HtmlDocument,
    LinkExtractor,
    css_urls,
    navigation_links,
    page_resources,
    xml_urls,
)
from crawler.policy.htmlparse import MAX_DEPTH

PAGE_URL = "http://h.test/dir/page.html"


def _document(markup: str | bytes, encoding: str = "utf-8") -> HtmlDocument:
    body = markup.encode(encoding) if isinstance(markup, str) else markup
    return HtmlDocument.from_response(
        HtmlResponse(PAGE_URL, body=body, encoding=encoding)
    )


@pytest.mark.parametrize(
    ("markup", "title"),
    [
        ("<title>Hello</title>", "Hello"),
        ("<head><title> A &amp; B </title></head>", " A & B "),
        ("<title></title><title>Second</title>", "Second"),
        ("<p>no title</p>", None),
        ("<body><p>x</p><title>In body</title></body>", "In body"),
        ("<title><b>tag</b> text</title>", "<b>tag</b> text"),
        ("<title>Line\nbreak</title>", "Line\nbreak"),
        ("", None),
    ],
)
def test_title_is_the_first_title_text_like_response_css(
    markup: str, title: str | None
):
    response = HtmlResponse(PAGE_URL, body=markup.encode(), encoding="utf-8")
    assert HtmlDocument.from_response(response).title == title
    assert response.css("title::text").get() == title


def test_base_url_and_encoding_are_the_responses():
    markup = '<head><base href="/other/"></head>'
    response = HtmlResponse(PAGE_URL, body=markup.encode("cp1252"), encoding="cp1252")
    document = HtmlDocument.from_response(response)
    assert document.base_url == "http://h.test/other/"
    assert document.encoding == "cp1252"
    assert document.url == PAGE_URL


def test_a_response_without_text_is_refused_with_valueerror():
    with pytest.raises(ValueError, match="TextResponse"):
        HtmlDocument.from_response(Response(PAGE_URL, body=b"<a href=x>"))  # type: ignore[arg-type]


def _hostile_bodies() -> dict[str, tuple[bytes, str]]:
    rng = random.Random(7)
    return {
        "binary junk": (rng.randbytes(200_000), "utf-8"),
        "junk as utf-16": (rng.randbytes(100_001), "utf-16"),
        "empty": (b"", "utf-8"),
        "only whitespace": (b" \n\t ", "utf-8"),
        "invalid utf-8": (b'<a href="\xff\xfe\xc3(">\xe2\x28\xa1</a>', "utf-8"),
        "nul bytes": (b'<a href="a\x00b">\x00x\x00</a><title>\x00t</title>', "utf-8"),
        "huge attribute": (b'<a href="' + b"x" * 3_000_000 + b'">x</a>', "utf-8"),
        "many attributes": (b"<a " + b" ".join(b"a%d=1" % i for i in range(5_000)) + b' href="ok">', "utf-8"),
        "deep nesting": (b"<div>" * 50_000 + b'<a href="deep">d</a>', "utf-8"),
        "unclosed everything": (b'<a href="x"<b<i<title>t<script>', "utf-8"),
        "bad base": (b'<base href="http://h.test:99999/"><a href="x">x</a>', "utf-8"),
    }  # fmt: skip


@pytest.mark.parametrize("name", list(_hostile_bodies()))
def test_hostile_bytes_never_raise(name: str):
    body, encoding = _hostile_bodies()[name]
    response = HtmlResponse(PAGE_URL, body=body, encoding=encoding)
    document = HtmlDocument.from_response(response)
    assert document.title is None or isinstance(document.title, str)
    links = LinkExtractor().extract_links(document)
    assert all(link.url.startswith("http") for link in links)
    assert isinstance(navigation_links(document), list)
    assert isinstance(page_resources(document), list)


@pytest.mark.parametrize("name", ["invalid utf-8", "nul bytes", "unclosed everything"])
def test_hostile_bytes_give_scrapys_links(name: str):
    body, encoding = _hostile_bodies()[name]
    response = HtmlResponse(PAGE_URL, body=body, encoding=encoding)
    expected = ScrapyLinkExtractor().extract_links(response)
    assert LinkExtractor().extract_links(response) == expected


@pytest.mark.parametrize(
    ("depth", "kept"), [(100, True), (MAX_DEPTH - 5, True), (MAX_DEPTH + 5, False)]
)
def test_a_page_is_cut_where_it_nests_deeper_than_the_limit(depth: int, kept: bool):
    """lexbor's cost is quadratic in nesting depth: the rest of a deeper page is cut."""
    markup = '<a href="first">f</a>' + "<div>" * depth + '<a href="deep">d</a>'
    urls = [link.url for link in LinkExtractor().extract_links(_document(markup))]
    expected = ["http://h.test/dir/first", "http://h.test/dir/deep"]
    assert urls == (expected if kept else expected[:1])


NAVIGATION_PAGE = """<html><head>
<link rel="next" href="p2.html#top"><link rel="prev" href="p0.html">
<link rel="stylesheet" href="s.css"><link rel="Alternate" href="/feed.xml">
<link rel="icon shortcut" href="/f.ico"><link rel="preconnect" href="https://cdn.test">
<link rel="search" href="  /search.xml "><link href="norel.html">
<link rel="next" href="p2.html"><link rel="index" href="javascript:void(0)">
<link rel="up" href="mailto:a@h.test"><link rel="start" href="//other.test/s">
</head><body><a href="a.html">not a link element</a></body></html>"""


def test_navigation_links_are_link_elements_without_resource_rels():
    assert navigation_links(_document(NAVIGATION_PAGE)) == [
        "http://h.test/dir/p2.html",
        "http://h.test/dir/p0.html",
        "http://h.test/feed.xml",
        "http://h.test/search.xml",
        "http://h.test/dir/norel.html",
        "http://other.test/s",
    ]


RESOURCE_PAGE = """<html><head><base href="/b/">
<link rel="stylesheet" href="s.css"><link rel="preconnect" href="https://cdn.test/">
<link rel="dns-prefetch" href="//dns.test"><link rel="next" href="p2.html">
<link rel="icon" href="/f.ico"><link rel="preload" href="font.woff2" as="font">
<link rel="manifest" href="app.webmanifest">
<style>@import "i.css"; /* url(commented.png) */ body{background:url( 'bg.png' )}
.x{background:url(data:image/png;base64,AA)} .y{background:URL("y.png#frag")}</style>
</head><body background="bb.png">
<img src=" a.png " srcset="a1.png 1x, a2.png 2x,a3.png"><picture>
<source srcset="s1.webp 100w, s2.webp 200w" type="image/webp"></picture>
<video src="v.mp4" poster="p.jpg"><source src="v.webm"><track src="t.vtt"></video>
<audio src="au.ogg"></audio><input type="IMAGE" src="btn.png"><input type="text" src="no.png">
<object data="o.swf"></object><embed src="e.swf"><iframe src="frame.html"></iframe>
<div style="background: url(div.png)"></div><script src="js.js"></script>
<script src="javascript:x"></script><img src="a.png"><img src="http://o.test/x.png#f">
<a href="page.html" style="background:url('a-style.png')">a</a></body></html>"""


def test_page_resources_are_what_the_page_embeds_in_document_order():
    assert page_resources(_document(RESOURCE_PAGE)) == [
        "http://h.test/b/s.css",
        "http://h.test/f.ico",
        "http://h.test/b/font.woff2",
        "http://h.test/b/app.webmanifest",
        "http://h.test/b/i.css",
        "http://h.test/b/bg.png",
        "http://h.test/b/y.png",
        "http://h.test/b/bb.png",
        "http://h.test/b/a.png",
        "http://h.test/b/a1.png",
        "http://h.test/b/a2.png",
        "http://h.test/b/a3.png",
        "http://h.test/b/s1.webp",
        "http://h.test/b/s2.webp",
        "http://h.test/b/v.mp4",
        "http://h.test/b/p.jpg",
        "http://h.test/b/v.webm",
        "http://h.test/b/t.vtt",
        "http://h.test/b/au.ogg",
        "http://h.test/b/btn.png",
        "http://h.test/b/o.swf",
        "http://h.test/b/e.swf",
        "http://h.test/b/div.png",
        "http://h.test/b/js.js",
        "http://o.test/x.png",
        "http://h.test/b/a-style.png",
    ]


def test_page_resources_use_the_page_encoding_for_queries():
    markup = '<img src="i.png?q=é">'
    document = _document(markup, "cp1252")
    assert page_resources(document) == ["http://h.test/dir/i.png?q=%E9"]


CSS_BASE = "http://h.test/c/s/style.css"


@pytest.mark.parametrize(
    ("css", "expected"),
    [
        (
            '@import url("x.css"); @import \'y.css\' screen; a{b:url(../z.png#f)}',
            ["http://h.test/c/s/x.css", "http://h.test/c/s/y.css", "http://h.test/c/z.png"],
        ),
        ("/* url(no.png) */ a{b:url( sp.png )}", ["http://h.test/c/s/sp.png"]),
        ('a{b:url("data:image/gif;base64,R0")} c{d:url(https://cdn.test/f.woff)}', ["https://cdn.test/f.woff"]),
        ("a{b:url(x.png)} c{d:URL(x.png)} e{f:url()}", ["http://h.test/c/s/x.png"]),
        ("/* unterminated " + "/* " * 10_000, []),
        ("a{b:url(é.png)}", ["http://h.test/c/s/%C3%A9.png"]),
        ("", []),
    ],
)  # fmt: skip
def test_css_urls(css: str, expected: list[str]):
    assert css_urls(css, CSS_BASE) == expected


SITEMAP = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc> http://h.test/a </loc></url><url><loc>/b#frag</loc></url>
<url><loc>http://h.test/a</loc></url><url><loc>ftp://h.test/no</loc></url></urlset>"""
RSS = b"""<rss version="2.0"><channel><link>http://h.test/</link>
<image><url>logo.png</url></image><item><link>item1.html</link>
<enclosure url="ignored-attribute.mp3"/></item></channel></rss>"""
ATOM = b"""<feed xmlns="http://www.w3.org/2005/Atom"><link href="/atom" rel="self"/>
<entry><link href="e1.html"/><content src="c.txt"/></entry></feed>"""
SVG = b"""<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">
<image xlink:href="i.png"/><a href="x.html"/><use xlink:href="#local"/></svg>"""
ENTITIES = b"""<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">
<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>
<urlset><url><loc>&e;</loc></url><url><loc>http://h.test/&d;</loc></url>
<url><loc>http://h.test/ok</loc></url></urlset>"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (SITEMAP, ["http://h.test/a", "http://h.test/b"]),
        (
            RSS,
            [
                "http://h.test/",
                "http://h.test/x/logo.png",
                "http://h.test/x/item1.html",
            ],
        ),
        (
            ATOM,
            ["http://h.test/atom", "http://h.test/x/e1.html", "http://h.test/x/c.txt"],
        ),
        (
            SVG,
            ["http://h.test/x/i.png", "http://h.test/x/x.html", "http://h.test/x/feed"],
        ),
        (ENTITIES, ["http://h.test/", "http://h.test/ok"]),
        (b"\x00\xff junk <<<", []),
        (b"", []),
        (b"<unclosed><loc>http://h.test/kept</loc>", ["http://h.test/kept"]),
    ],
    ids=["sitemap", "rss", "atom", "svg", "entities", "junk", "empty", "unclosed"],
)
def test_xml_urls(body: bytes, expected: list[str]):
    assert xml_urls(body, "http://h.test/x/feed") == expected
