"""A plain GET of a URL, without a ``Request`` (issue 27: bulk seeding): the URL as
``Request`` keeps it, and the fingerprint Scrapy's default fingerprinter gives it."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from scrapy.utils.request import RequestFingerprinter, fingerprint
from w3lib.url import canonicalize_url, safe_url_string

if TYPE_CHECKING:
    from scrapy.utils.request import RequestFingerprinterProtocol


def request_url(url: str) -> str:
    """*url* as ``Request(url).url`` keeps it (``safe_url_string``, UTF-8)."""
    return safe_url_string(url, "utf-8")


def is_default(fingerprinter: RequestFingerprinterProtocol) -> bool:
    """Whether *fingerprinter* is Scrapy's own, unchanged: ``get_fingerprint``
    then gives what it gives ``Request(url)``."""
    return (
        type(fingerprinter) is RequestFingerprinter
        and fingerprinter._fingerprint is fingerprint
    )


# ``json.dumps`` of Scrapy's fingerprint data for a GET with no body and no headers,
# keys sorted, with the canonical URL's JSON in place of ``%s``: the dict sorted and
# dumped whole took half the time of a seed's fingerprint (issue 27: bulk seeding).
_GET_FINGERPRINT_DATA = '{"body": "", "headers": {}, "method": "GET", "url": %s}'


def get_fingerprint(url: str) -> bytes:
    """What ``scrapy.utils.request.fingerprint`` gives a GET of *url* (as
    ``request_url`` returns it) with no body and no ``verbatim_url``: the SHA1 of
    the same JSON."""
    data = _GET_FINGERPRINT_DATA % json.dumps(canonicalize_url(url))
    return hashlib.sha1(data.encode()).digest()  # noqa: S324
