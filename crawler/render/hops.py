"""A rendered page's requests fetched one redirect hop at a time.

Playwright's routes see only the first URL of a redirect chain: the browser follows a
redirect unrouted, so a page's script on its own host could lead the browser to any
other. Here each allowed request is fetched by the route with redirects off; a
redirect's target is checked by the page's rules before it is fetched in turn, and
the browser gets the last answer. The page's own document is never followed: its
redirect goes back to Scrapy (``Redirect``), whose redirect middleware queues the
target in the frontier under its own host's politeness, as for a static fetch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

if TYPE_CHECKING:
    from collections.abc import Callable

    from playwright.async_api import APIResponse, Route

# Redirect hops a subrequest may take.
MAX_HOPS = 10
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Headers of a body as it came over the wire (the client hands it decoded).
WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
# Headers the route's own client sets (it decodes what it asked for).
CLIENT_HEADERS = frozenset({"accept-encoding", "content-length", "host"})


@dataclass(frozen=True)
class Redirect:
    """The page's own document answered with a redirect."""

    status: int
    headers: dict[str, str]


@dataclass(frozen=True)
class Hop:
    """One request of a chain: where, how."""

    url: str
    method: str
    post_data: bytes | None


def next_hop(hop: Hop, status: int, location: str) -> Hop:
    """The request a redirect leads to (a 303, or a 301/302 of a POST, becomes a
    GET without body, as browsers do)."""
    url = urljoin(hop.url, location)
    if status == 303 or (status in (301, 302) and hop.method == "POST"):
        return Hop(url, "GET", None)
    return Hop(url, hop.method, hop.post_data)


def client_headers(headers: dict[str, str], user_agent: str | None) -> dict[str, str]:
    """*headers* for the route's client: the crawl's User-Agent, no encoding."""
    kept = {k: v for k, v in headers.items() if k.lower() not in CLIENT_HEADERS}
    if user_agent:
        kept = {k: v for k, v in kept.items() if k.lower() != "user-agent"}
        kept["user-agent"] = user_agent
    return kept


async def fetch_document(
    route: Route, hop: Hop, headers: dict[str, str], timeout: float
) -> Redirect | bytes:
    """Fetch the page's document for the browser, and return its body as served; a
    redirect is not followed but returned (the browser's navigation is aborted)."""
    response = await _fetch(route, hop, headers, timeout)
    if response.status in REDIRECT_STATUSES and "location" in response.headers:
        redirect = Redirect(response.status, dict(response.headers))
        await response.dispose()
        await route.abort("blockedbyclient")
        return redirect
    body = await response.body()
    await _fulfill(route, response, body)
    return body


async def fetch_checked(
    route: Route,
    hop: Hop,
    headers: dict[str, str],
    *,
    blocked: Callable[[str], str | None],
    timeout: float,
) -> str | None:
    """Fetch a subrequest hop by hop for the browser; the reason a hop was refused
    (then the browser's request fails), None when it got its answer."""
    for _ in range(MAX_HOPS + 1):
        response = await _fetch(route, hop, headers, timeout)
        location = response.headers.get("location")
        if response.status not in REDIRECT_STATUSES or not location:
            await _fulfill(route, response, await response.body())
            return None
        await response.dispose()
        hop = next_hop(hop, response.status, location)
        reason = blocked(hop.url)
        if reason is not None:
            await route.abort("blockedbyclient")
            return reason
    await route.abort("blockedbyclient")
    return "redirects"


async def _fulfill(route: Route, response: APIResponse, body: bytes) -> None:
    """Answer the browser with *response*: its body as decoded by the client, so
    without the headers of its encoded form."""
    headers = {
        name: value
        for name, value in response.headers.items()
        if name.lower() not in WIRE_HEADERS
    }
    await route.fulfill(status=response.status, headers=headers, body=body)


async def _fetch(
    route: Route, hop: Hop, headers: dict[str, str], timeout: float
) -> APIResponse:
    return await route.fetch(
        url=hop.url,
        method=hop.method,
        headers=headers,
        post_data=hop.post_data,
        max_redirects=0,
        timeout=max(timeout, 0.001) * 1000,
    )


def abort_code(error: Exception) -> str:
    """The browser's network error for a failed fetch of the route's client."""
    message = str(error)
    for marker, code in _ABORT_CODES:
        if marker in message:
            return code
    return "failed"


_ABORT_CODES = (
    ("ECONNREFUSED", "connectionrefused"),
    ("ENOTFOUND", "namenotresolved"),
    ("EAI_AGAIN", "namenotresolved"),
    ("ECONNRESET", "connectionreset"),
    ("Timeout", "timedout"),
)
