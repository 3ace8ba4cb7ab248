"""Which host a URL belongs to, for queues, politeness and sharding."""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

import tldextract

ShardBy = Literal["host", "domain"]
SHARD_BY_CHOICES: tuple[ShardBy, ...] = ("host", "domain")

# The bundled public suffix snapshot only: never a network fetch.
_EXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


class BadURLError(ValueError):
    """A URL that has no host the crawler can queue."""


# RFC 1035 2.3.4: a label is at most 63 octets, a name at most 255 (253 as text).
MAX_LABEL_LENGTH = 63
MAX_HOST_LENGTH = 253


# The host of most URLs, read without ``urlsplit`` (issue 27: it was a fifth of a
# seed's time): a lower-case name of labels of 1 to 63 characters right after
# http(s)://, then a port, the path, query or fragment, or the end. Anything else
# (upper case, user info, IPv6, spaces urlsplit would strip, a bad label) is left
# to urlsplit and the checks below.
_PLAIN_HOST = re.compile(
    r"https?://((?:[a-z0-9-]{1,63}\.)*[a-z0-9-]{1,63}\.?)(?::[0-9]*)?(?=[/?#]|\Z)"
)


def host_of(url: str) -> str:
    """The lower-case host name of *url*, without port (Scrapy's download-slot key)."""
    plain = _PLAIN_HOST.match(url)
    if plain is not None and len(plain[1]) <= MAX_HOST_LENGTH:
        return plain[1]  # a DNS name already
    try:
        host = urlsplit(url).hostname
    except ValueError as exc:  # e.g. an unbalanced "[" in the netloc
        raise BadURLError(f"cannot parse host of {url!r}: {exc}") from None
    if not host:
        raise BadURLError(f"no host in {url!r}")
    if ":" not in host and not _is_dns_name(host):
        raise BadURLError(f"{host!r} in {url!r} is not a DNS name (RFC 1035 lengths)")
    return host


def _is_dns_name(host: str) -> bool:
    """Whether *host* fits DNS: at most 253 characters, labels of 1 to 63. A resolver
    handed a longer label fails outside the request (Twisted's raises in a callback
    no request waits on, and the request never ends)."""
    labels = host.removesuffix(".").split(".")
    return len(host) <= MAX_HOST_LENGTH and all(
        0 < len(label) <= MAX_LABEL_LENGTH for label in labels
    )


@lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The registered domain of *host* (``a.b.example.co.uk`` -> ``example.co.uk``).

    IP addresses and hosts without a public suffix (``localhost``) are their own domain.
    """
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return host
    return _EXTRACT(host).top_domain_under_public_suffix or host


def shard_key(host: str, shard_by: ShardBy) -> str:
    """The string whose hash picks the shard of *host*."""
    return host if shard_by == "host" else registered_domain(host)
