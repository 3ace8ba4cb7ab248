"""The one PageRecord every URL gets: a page, a redirect, or a failure with its fate.

Built from what Scrapy hands the spider (a response, or the failure of a request),
so the records database and the item feed account for every URL the frontier
handed out, broken links and refused pages included (crawler.policy.fates).
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypedDict, TypeGuard, cast

from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse

from crawler.items import PageRecord
from crawler.meta import CONTENT_SIGNALS, FATE, IMPORTANCE, INLINKS, NODE, TIER
from crawler.policy.contentsignals import checked
from crawler.policy.fates import (
    FAILED_FATES,
    FATES,
    fate_of_exception,
    fate_of_status,
)
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.simhash import encode, page_text, simhash

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy import Request
    from twisted.python.failure import Failure

    from crawler.policy.fates import Fate

# Longest error text a record keeps.
ERROR_WIDTH = 500
# What Scrapy's RedirectMiddleware raises past REDIRECT_MAX_TIMES: not a robots
# refusal, though an IgnoreRequest.
TOO_MANY_REDIRECTS = "max redirections reached"
# A revisit's answer when the page did not change (crawler.revisit): no body.
NOT_MODIFIED = 304
# Media types whose links the spider follows (besides any HtmlResponse).
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def is_html(response: Response) -> TypeGuard[TextResponse]:
    """Whether *response* is (X)HTML: a page, read for links whatever BFS_FOLLOW
    says (crawler.spiders.follow)."""
    if isinstance(response, HtmlResponse):
        return True
    if not isinstance(response, TextResponse):
        return False
    return media_type(response) in HTML_TYPES


def media_type(response: Response) -> str:
    """The response's media type, lower case, without its parameters."""
    content_type = response.headers.get("Content-Type") or b""
    return content_type.split(b";")[0].strip().lower().decode("latin-1")


def page_record(
    response: Response,
    links: int,
    *,
    title: str | None = None,
    fate: Fate = "fetched",
    error: str | None = None,
) -> PageRecord:
    """The record of a response the spider handled (fetched, or *fate*)."""
    content_type = response.headers.get("Content-Type")
    last_modified = response.headers.get("Last-Modified")
    etag = response.headers.get("ETag")
    keep_body = fate == "fetched"
    return PageRecord(
        url=response.url,
        status=response.status,
        depth=response.meta.get("depth", 0),
        title=title.strip() if title else None,
        content_type=content_type.decode("latin-1") if content_type else None,
        length=len(response.body),
        links=links,
        fetched_at=now(),
        host=host_or_empty(response.url),
        last_modified=last_modified.decode("latin-1") if last_modified else None,
        etag=etag.decode("latin-1") if etag else None,
        # A 304 has no body: the stored version stays the page's (its hash is kept).
        content_hash=None
        if response.status == NOT_MODIFIED
        else hashlib.sha256(response.body).hexdigest(),
        text_hash=text_hash(response) if keep_body else None,
        tier=response.meta.get(TIER, 0),
        node=response.meta.get(NODE, ""),
        body=response.body if keep_body else b"",
        fate=fate,
        error=error,
        location=_location(response) if fate == "redirected" else None,
        **importance_of(response.meta),
        content_signals=checked(response.meta.get(CONTENT_SIGNALS)),
    )


def text_hash(response: Response) -> str | None:
    """The SimHash of an HTML page's visible text (``crawler.policy.simhash``), for
    telling a small change from a real one; None for anything else."""
    if response.status != HTTPStatus.OK or not isinstance(response, HtmlResponse):
        return None
    return encode(simhash(page_text(response.text)))


def redirect_records(meta: Mapping[str, Any], final_url: str) -> list[PageRecord]:
    """A ``redirected`` record for each URL Scrapy's RedirectMiddleware followed on
    the way to *final_url* (``redirect_urls`` in *meta*), saying where it led."""
    urls = [u for u in meta.get("redirect_urls") or () if isinstance(u, str)]
    reasons = list(meta.get("redirect_reasons") or ())
    records = []
    for index, url in enumerate(urls):
        reason = reasons[index] if index < len(reasons) else None
        records.append(
            PageRecord(
                url=url,
                status=reason if isinstance(reason, int) else 200,  # meta refresh
                depth=meta.get("depth", 0),
                title=None,
                content_type=None,
                length=0,
                links=0,
                fetched_at=now(),
                host=host_or_empty(url),
                tier=meta.get(TIER, 0),
                node=meta.get(NODE, ""),
                fate="redirected",
                location=urls[index + 1] if index + 1 < len(urls) else final_url,
                **importance_of(meta),
            )
        )
    return records


def failure_record(failure: Failure) -> PageRecord:
    """The record of a request that failed for good: the HTTP answer's status and
    headers for an HTTP error, else status 0; always the fate and the error."""
    request: Request = failure.request  # type: ignore[attr-defined]
    fate, error = fate_of_failure(failure)
    response = getattr(failure.value, "response", None)
    if isinstance(response, Response):
        return page_record(response, 0, fate=fate, error=error)
    return PageRecord(
        url=request.url,
        status=0,
        depth=request.meta.get("depth", 0),
        title=None,
        content_type=None,
        length=0,
        links=0,
        fetched_at=now(),
        host=host_or_empty(request.url),
        tier=request.meta.get(TIER, 0),
        node=request.meta.get(NODE, ""),
        error=error,
        fate=fate,
        **importance_of(request.meta),
    )


class Importance(TypedDict):
    importance: float | None
    inlinks: int | None


def importance_of(meta: Mapping[str, Any]) -> Importance:
    """The importance and in-links the frontier handed a request out with (None
    for each when it set none, or a value that is no finite number or count)."""
    importance = meta.get(IMPORTANCE)
    inlinks = meta.get(INLINKS)
    return {
        "importance": _finite(importance),
        "inlinks": inlinks if _is_int(inlinks) else None,
    }


def _finite(value: object) -> float | None:
    """*value* as a finite float; None if it is none (a bool is no number)."""
    if not _is_int(value) and not isinstance(value, float):
        return None
    number = float(cast("float", value))
    return number if math.isfinite(number) else None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def fate_of_failure(failure: Failure) -> tuple[Fate, str]:
    """The fate and error text of a failed request: the fate a component set in
    ``meta[crawler.meta.FATE]`` (a fate, or ``[fate, error]``) wins; else the
    HTTP status of an HTTP error decides, else the exception's class. The error
    is the HTTP status line of an answer, else the exception."""
    request: Request = failure.request  # type: ignore[attr-defined]
    value = failure.value
    assert value is not None  # a Failure always holds its exception
    status = getattr(getattr(value, "response", None), "status", None)
    answered = isinstance(status, int) and status >= 300
    if answered:
        error = _status_text(cast("int", status))
    else:
        error = f"{type(value).__name__}: {failure.getErrorMessage()}"[:ERROR_WIDTH]
    given = request.meta.get(FATE)
    if isinstance(given, list | tuple) and given:
        if len(given) > 1 and given[1]:
            error = str(given[1])[:ERROR_WIDTH]
        given = given[0]
    if given in FATES:
        return cast("Fate", given), error
    if answered:
        return fate_of_status(cast("int", status)), error
    if type(value) is IgnoreRequest and str(value) == TOO_MANY_REDIRECTS:
        return "unparseable", error
    return fate_of_exception(_class_names(value)), error


def _status_text(status: int) -> str:
    """``HTTP 404 Not Found``: the error text of an HTTP answer refused."""
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def _class_names(exception: BaseException) -> list[str]:
    """Dotted names of the classes of *exception* (its MRO)."""
    return [f"{cls.__module__}.{cls.__qualname__}" for cls in type(exception).__mro__]


def _location(response: Response) -> str | None:
    """Where a 3xx answer points, as an absolute URL (None without Location)."""
    location = response.headers.get("Location")
    if not location:
        return None
    try:
        return response.urljoin(location.decode("latin-1"))
    except ValueError:
        return location.decode("latin-1")


def now() -> str:
    """UTC, ISO 8601 to the millisecond: sorts as text."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def host_or_empty(url: str) -> str:
    try:
        return host_of(url)
    except BadURLError:
        return ""


def fates_summary(stats: Mapping[str, Any]) -> str:
    """The end-of-crawl line, from this node's ``bfs/fate_count/*`` stats: URLs
    recorded, and how many failed for good, by fate."""
    counts = {
        fate: count
        for fate in FATES
        if isinstance(count := stats.get(f"bfs/fate_count/{fate}", 0), int) and count
    }
    total = sum(counts.values())
    failed = {fate: n for fate, n in counts.items() if fate in FAILED_FATES}
    done = ", ".join(
        f"{counts[fate]} {fate}"
        for fate in ("fetched", "redirected", "trap")
        if fate in counts
    )
    head = f"URLs recorded: {total}" + (f" ({done})" if done else "")
    if not failed:
        return f"{head}; none failed for good"
    why = ", ".join(f"{n} {fate}" for fate, n in failed.items())
    return f"{head}; {sum(failed.values())} failed for good: {why}"
