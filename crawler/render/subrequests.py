"""Which of a rendered page's own requests the browser may make (``RENDER_BLOCK``).

A rendered page is one fetch of its host: what the browser asks for on the page's
behalf must not reach other hosts (they were not given a politeness delay, a lease
or a robots.txt check) nor cost bandwidth the crawl does not need (images, fonts,
media). Pure: no browser, no I/O.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from crawler.policy.hosts import BadURLError, host_of

# Each RENDER_BLOCK resource name, and the resource types the browser reports for
# it ("fetch" covers every script-made request: fetch(), XMLHttpRequest,
# EventSource and WebSocket).
RESOURCE_TYPES: dict[str, frozenset[str]] = {
    "image": frozenset({"image", "imageset"}),
    "font": frozenset({"font"}),
    "media": frozenset({"media", "texttrack"}),
    "stylesheet": frozenset({"stylesheet"}),
    "script": frozenset({"script"}),
    "fetch": frozenset({"fetch", "xhr", "eventsource", "websocket"}),
}
# Schemes a page's request may use; anything else (file:, ftp:, chrome:...) is
# never fetched.
NETWORK_SCHEMES = frozenset({"http", "https"})


def blocked_reason(
    url: str, resource_type: str, *, page_host: str, block: frozenset[str]
) -> str | None:
    """Why the browser may not fetch *url* for a page of *page_host*: "scheme",
    "bad_url", "third-party" or the ``RENDER_BLOCK`` resource name; None when
    it may."""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return "bad_url"
    if scheme not in NETWORK_SCHEMES:
        return "scheme"
    try:
        host = host_of(url)
    except BadURLError:
        return "bad_url"
    if "third-party" in block and host != page_host:
        return "third-party"
    for name in sorted(block & RESOURCE_TYPES.keys()):
        if resource_type in RESOURCE_TYPES[name]:
            return name
    return None
