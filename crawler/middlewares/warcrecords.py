"""The WARC records of one download: its request as sent, its response as received.

The response's body is the raw one, still compressed when the server sent
``Content-Encoding``, so the stored payload always agrees with the stored headers.
The HTTP client has already removed chunked transfer coding: a ``Transfer-Encoding``
header is kept as ``X-Crawler-Transfer-Encoding``. Records are built in memory
(digests are computed when they are written, by ``crawler.middlewares.warcfiles``).

A revisit of a page (a request with meta ``frontier_revisit``, whose ``hash`` is the
SHA-256 of the body last stored) that brings nothing new is a ``revisit`` record
instead of a ``response``: its status line and headers, no payload. A 304 gets the
profile ``server-not-modified``; a 200 whose raw body (no ``Content-Encoding``) has
the stored hash gets ``identical-payload-digest``, with the payload's digest as a
response record would carry it, so a reader finds the earlier capture by digest.
Both refer to the same URL (``WARC-Refers-To-Target-URI``); the date of the earlier
capture is not known here and is left out (it is optional).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from http import HTTPStatus
from io import BytesIO
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

# warcio ships no type hints: its objects are Any here.
from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.utils import Digester

from crawler.meta import REVISIT

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

# WARC/1.0: what warcio, Heritrix and wget write, and every WARC reader accepts.
WARC_VERSION = "1.0"
# Request headers never written: credentials meant for a proxy, not the site.
PRIVATE_HEADERS = frozenset({b"proxy-authorization"})
# Response headers the HTTP client already applied, kept under another name.
RENAMED_HEADERS = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}
# Builds records (no I/O): one is enough for the process.
_BUILDER = RecordBuilder(warc_version=WARC_VERSION)
# Revisit profiles of the WARC version the files are written in.
NOT_MODIFIED_PROFILE = (
    f"http://netpreserve.org/warc/{WARC_VERSION}/revisit/server-not-modified"
)
IDENTICAL_PAYLOAD_PROFILE = (
    f"http://netpreserve.org/warc/{WARC_VERSION}/revisit/identical-payload-digest"
)


def download_records(
    request: Request, response: Response, *, sent: float
) -> tuple[Any, Any]:
    """The ``request`` and ``response`` records of a download that went to the
    download handler at *sent* (epoch seconds: both records' WARC-Date)."""
    protocol = _protocol(response)
    date = datetime_to_iso_date(datetime.fromtimestamp(sent, UTC).replace(tzinfo=None))
    warc_headers = {"WARC-Date": date}
    if response.ip_address is not None:
        warc_headers["WARC-IP-Address"] = str(response.ip_address)
    if "dataloss" in response.flags:
        warc_headers["WARC-Truncated"] = "disconnect"
    http_headers = response_headers(response, protocol)
    profile = revisit_profile(request, response)
    if profile is None:
        response_record = _record(
            request.url, "response", response.body, warc_headers, http_headers
        )
    else:
        response_record = _revisit_record(
            request.url, profile, response.body, warc_headers, http_headers
        )
    request_record = _record(
        request.url, "request", request.body, {"WARC-Date": date},
        request_headers(request, protocol),
    )  # fmt: skip
    return request_record, response_record


def revisit_profile(request: Request, response: Response) -> str | None:
    """The revisit profile of a response that brought nothing new, None for any
    other (see the module docstring). A compressed or truncated body is never
    compared: the stored hash is of a whole, decoded body."""
    revisit = request.meta.get(REVISIT)
    if not isinstance(revisit, dict):
        return None
    if response.status == 304:
        return NOT_MODIFIED_PROFILE
    stored = revisit.get("hash")
    if (
        response.status == 200
        and isinstance(stored, str)
        and not response.headers.get(b"Content-Encoding")
        and "dataloss" not in response.flags
        and hashlib.sha256(response.body).hexdigest() == stored.lower()
    ):
        return IDENTICAL_PAYLOAD_PROFILE
    return None


def _revisit_record(
    url: str,
    profile: str,
    body: bytes,
    warc_headers: dict[str, str],
    http_headers: Any,
) -> Any:
    """A ``revisit`` record of *url* under *profile*: headers only."""
    if profile == NOT_MODIFIED_PROFILE:
        headers = {
            **warc_headers,
            "WARC-Profile": profile,
            "WARC-Refers-To-Target-URI": url,
        }
        return _BUILDER.create_warc_record(
            url, "revisit", warc_headers_dict=headers, http_headers=http_headers
        )
    digester = Digester("sha1")  # the digest warcio gives a response's payload
    digester.update(body)
    record = _BUILDER.create_revisit_record(
        url, str(digester), url, None,
        http_headers=http_headers, warc_headers_dict=dict(warc_headers),
    )  # fmt: skip
    record.rec_headers.remove_header("WARC-Refers-To-Date")  # not known here
    return record


def _protocol(response: Response) -> str:
    protocol = response.protocol or ""
    return protocol if protocol.startswith("HTTP/") else "HTTP/1.1"


def _header_list(headers: Any, skip: frozenset[bytes]) -> list[tuple[str, str]]:
    """Scrapy headers as (name, value) text pairs, one per value, in their order."""
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in headers.items()
        if name.lower() not in skip
        for value in values
    ]


def request_headers(request: Request, protocol: str) -> Any:
    """The request line and headers as sent; the HTTP client adds Host itself."""
    url = urlsplit(request.url)
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = _header_list(request.headers, PRIVATE_HEADERS | {b"host"})
    host = request.headers.get(b"Host")
    headers.insert(0, ("Host", host.decode("latin-1") if host else url.netloc))
    line = f"{request.method} {target} {protocol}"
    return StatusAndHeaders(line, headers, is_http_request=True)


def response_headers(response: Response, protocol: str) -> Any:
    """The status line and headers as received (see the module docstring)."""
    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:
        reason = ""
    headers = [
        (RENAMED_HEADERS.get(name.lower(), name), value)
        for name, value in _header_list(response.headers, frozenset())
    ]
    return StatusAndHeaders(f"{response.status} {reason}".rstrip(), headers, protocol)


def _record(
    url: str,
    record_type: str,
    body: bytes,
    warc_headers: dict[str, str],
    http_headers: Any,
) -> Any:
    """A record of *body* after *http_headers*; digests are computed on writing."""
    return _BUILDER.create_warc_record(
        url,
        record_type,
        payload=BytesIO(body),
        length=len(body),
        warc_headers_dict=warc_headers,
        http_headers=http_headers,
    )
