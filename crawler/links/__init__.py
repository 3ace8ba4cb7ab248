"""Links, title and resources of a page from one lexbor parse."""

from crawler.links.document import HtmlDocument
from crawler.links.extractor import LinkExtractor
from crawler.links.resources import css_urls, navigation_links, page_resources
from crawler.links.xmlurls import xml_urls

__all__ = [
    "HtmlDocument",
    "LinkExtractor",
    "css_urls",
    "navigation_links",
    "page_resources",
    "xml_urls",
]
