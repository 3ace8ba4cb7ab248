"""URLs in XML documents that are not HTML: SVG, RSS, Atom, sitemaps.

The parser is locked down for hostile input: no entity expansion (billion laughs,
external entities), no network, no DTD loading, no huge-tree mode (libxml2's size
limits stay on). Junk gives an empty list, never an exception.
"""

from __future__ import annotations

from urllib.parse import urljoin

from lxml import etree  # type: ignore[import-untyped]
from w3lib.url import safe_url_string

# Attributes (by local name, any namespace: xlink:href included) holding a URL.
_URL_ATTRIBUTES = frozenset({"href", "src"})
# Elements (by local name) whose text is a URL: sitemap <loc>, RSS <link>, <url>.
_URL_ELEMENTS = frozenset({"loc", "link", "url"})
_WHITESPACE = " \t\n\r\x0c"


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        recover=True,
    )


def _local_name(name: str) -> str:
    return name.rpartition("}")[2]


def _absolute(value: str, base_url: str) -> str | None:
    """*value* as an absolute http(s) URL without fragment, or None."""
    value = value.strip(_WHITESPACE)
    if not value:
        return None
    try:
        url = safe_url_string(urljoin(base_url, value))
    except ValueError:
        return None
    if not url.startswith(("http://", "https://")):
        return None
    return url.partition("#")[0]


def _raw_urls(root: etree._Element) -> list[str]:
    """Attribute values and element texts that hold URLs, in document order."""
    values: list[str] = []
    for element in root.iter(etree.Element):
        if not isinstance(element.tag, str):
            continue
        for name, value in element.attrib.items():
            if _local_name(name) in _URL_ATTRIBUTES:
                values.append(value)
        if _local_name(element.tag) in _URL_ELEMENTS and element.text:
            values.append(element.text)
    return values


def xml_urls(body: bytes, base_url: str) -> list[str]:
    """Absolute http(s) URLs of *body* (href, src and xlink:href attributes, the
    text of <loc>, <link> and <url>), each once, in document order."""
    if not body or not body.strip():
        return []
    try:
        root = etree.fromstring(body, parser=_parser())
    except (etree.LxmlError, ValueError):
        return []
    if root is None:
        return []
    urls: dict[str, None] = {}
    for value in _raw_urls(root):
        url = _absolute(value, base_url)
        if url is not None:
            urls[url] = None
    return list(urls)
