"""A plain GET of a URL, without a ``Request`` (issue 27: bulk seeding): the URL as
``Request`` keeps it, and the fingerprint Scrapy's default fingerprinter gives it."""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING

from scrapy.utils.request import RequestFingerprinter, fingerprint
from w3lib.url import canonicalize_url, safe_url_string

if TYPE_CHECKING:
    from scrapy.utils.request import RequestFingerprinterProtocol


# A URL that ``safe_url_string`` and ``canonicalize_url`` both return as it is:
# http(s), a lower-case ASCII host name, a port without leading zeros (up to 65535:
# Request refuses more), and a path of characters neither escapes, without ";"
# (empty parameters are dropped), a dot segment ("/.", checked apart), a query or a
# fragment. Most seeds are such, and w3lib's parse took two thirds of a seed's time
# (issue 27: bulk seeding). tests/unit/test_plain_url.py holds this to w3lib.
_AS_IS = re.compile(
    r"https?://[a-z0-9]+(?:[.-][a-z0-9]+)*\.?(?::([1-9][0-9]{0,4}))?"
    r"(/[-A-Za-z0-9._~!$&'()*+,=:@/]*)"
)
MAX_PORT = 65535


def as_is(url: str) -> bool:
    """Whether w3lib would return *url* unchanged, both as ``Request`` keeps it and
    as its canonical form (``_AS_IS``)."""
    plain = _AS_IS.fullmatch(url)
    return (
        plain is not None
        and "/." not in plain[2]
        and (plain[1] is None or int(plain[1]) <= MAX_PORT)
    )


def request_url(url: str) -> str:
    """*url* as ``Request(url).url`` keeps it (``safe_url_string``, UTF-8)."""
    return url if as_is(url) else safe_url_string(url, "utf-8")


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
    # A URL kept as is holds nothing JSON escapes.
    quoted = f'"{url}"' if as_is(url) else json.dumps(canonicalize_url(url))
    data = _GET_FINGERPRINT_DATA % quoted
    return hashlib.sha1(data.encode()).digest()  # noqa: S324
