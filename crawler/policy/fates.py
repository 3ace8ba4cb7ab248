"""What became of a URL: the one recorded fate every request the frontier accepted
ends in, and which failures may pass (tried again later) and which are final.

Pure: exceptions are given by the dotted names of their classes (their MRO), so this
module needs neither Scrapy nor Twisted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from collections.abc import Iterable

Fate = Literal[
    "fetched",  # a response the spider handled (with its status)
    "redirected",  # answered with a redirect, followed (the record says where)
    "http_error",  # a 4xx/5xx answer (with its status)
    "network_error",  # DNS, refused, reset, TLS: no HTTP answer
    "timed_out",  # timed out on every timeout tier
    "robots_disallowed",  # robots.txt forbids it
    "robots_unreachable",  # robots.txt could not be fetched for too long
    "too_large",  # bigger than DOWNLOAD_MAXSIZE (after decompression)
    "unparseable",  # a URL or answer that cannot be handled (bad scheme, bad URL)
    "ignored",  # dropped by a downloader middleware (IgnoreRequest), e.g. offsite
    # a link cut as a spider trap before it was queued (crawler.policy.traps), or a
    # queued URL found to be a copy of a page fetched (crawler.middlewares.knowncopies)
    "trap",
]
FATES: tuple[Fate, ...] = get_args(Fate)
# A trap is no failure: the URL was never fetched (the record says which rule cut it).
FAILED_FATES: frozenset[Fate] = frozenset(FATES) - {"fetched", "redirected", "trap"}
# Failures before anything was sent to the host: its politeness delay is not spent.
UNTOUCHED_FATES: frozenset[str] = frozenset(
    {"robots_disallowed", "robots_unreachable", "ignored", "trap"}
)

# HTTP answers that may pass: the server is overloaded or down for a while.
TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 522, 524})

# Exception class names (any class of the exception's MRO) -> fate. First match wins.
_EXCEPTION_FATES: tuple[tuple[str, Fate], ...] = (
    # Over DOWNLOAD_MAXSIZE once decompressed (crawler.middlewares.sizes; an
    # IgnoreRequest, so before it), or cut by the download handler as it came in.
    ("crawler.middlewares.sizes.ResponseTooLargeError", "too_large"),
    ("scrapy.exceptions.DownloadCancelledError", "too_large"),
    ("scrapy.exceptions.DownloadTimeoutError", "timed_out"),
    ("twisted.internet.error.TimeoutError", "timed_out"),
    ("twisted.internet.error.TCPTimedOutError", "timed_out"),
    ("crawler.frontier.holds.HoldRequest", "robots_unreachable"),
    ("crawler.frontier.holds.ForbiddenByRobots", "robots_disallowed"),
    ("crawler.middlewares.knowncopies.KnownCopy", "trap"),
    ("crawler.middlewares.deaddirs.DeadDirectory", "trap"),
    ("scrapy.exceptions.IgnoreRequest", "ignored"),
    ("twisted.internet.error.DNSLookupError", "network_error"),
    ("twisted.internet.error.ConnectError", "network_error"),
    ("twisted.internet.error.ConnectionLost", "network_error"),
    ("twisted.internet.error.ConnectionDone", "network_error"),
    ("twisted.web._newclient.ResponseFailed", "network_error"),
    ("twisted.web._newclient.ResponseNeverReceived", "network_error"),
    ("OpenSSL.SSL.Error", "network_error"),
    ("builtins.OSError", "network_error"),
    # Scrapy 2.13+ download handlers wrap Twisted's errors in these.
    ("scrapy.exceptions.CannotResolveHostError", "network_error"),
    ("scrapy.exceptions.DownloadConnectionRefusedError", "network_error"),
    ("scrapy.exceptions.DownloadFailedError", "network_error"),
    ("scrapy.exceptions.ResponseDataLossError", "network_error"),
)
# Network errors that are final: the URL itself is wrong, not the network.
_FINAL_NETWORK = frozenset({"twisted.web.error.SchemeNotSupported"})
_TRANSIENT_FATES: frozenset[Fate] = frozenset(
    {"network_error", "timed_out", "robots_unreachable"}
)


def fate_of_exception(class_names: Iterable[str]) -> Fate:
    """The fate of a download that raised an exception of these classes (its MRO,
    dotted names); anything unknown is ``unparseable``: it will not pass by itself."""
    names = list(class_names)
    if any(name in _FINAL_NETWORK for name in names):
        return "unparseable"
    for name, fate in _EXCEPTION_FATES:
        if name in names:
            return fate
    return "unparseable"


def fate_of_status(status: int) -> Fate:
    """The fate of a final HTTP answer."""
    if 300 <= status < 400:
        return "redirected"
    return "http_error" if status >= 400 else "fetched"


def may_pass(fate: Fate, status: int | None = None) -> bool:
    """Whether a failure with this fate (and HTTP status) is worth another try later."""
    if fate == "http_error":
        return status in TRANSIENT_STATUSES
    return fate in _TRANSIENT_FATES
