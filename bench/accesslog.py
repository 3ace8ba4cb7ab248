"""nginx access logs of the real-sites benchmark: what each crawl fetched. Pure.

Every site logs one tab-separated line a response in ``LOG_FORMAT``; a crawl's
responses are the lines written while it ran. The sets of HTML pages fetched
(status 200, ``text/html``) are what crawls are compared by (``coverage``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

# Tab-separated: nginx escapes a tab (or any byte below 0x20, ``"`` or ``\``) inside
# a value as \xHH, so a value never holds the separator. An absent header is "-".
LOG_FORMAT = (
    "$msec\t$status\t$request_method\t$request_uri\t$body_bytes_sent\t$bytes_sent"
    "\t$sent_http_content_type"
)
FIELDS = 7
HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass(frozen=True, slots=True)
class LogLine:
    """One response as nginx logged it; ``url`` is the site's origin plus the URI."""

    time: float
    status: int
    method: str
    url: str
    body_bytes: int
    bytes_sent: int
    content_type: str

    @property
    def is_html_page(self) -> bool:
        """A page as the benchmark counts them: 200, with an HTML media type."""
        media_type = self.content_type.partition(";")[0].strip().lower()
        return self.status == 200 and media_type in HTML_TYPES


def parse_line(line: str, origin: str) -> LogLine:
    """The response logged on *line* of the site at *origin* (``http://host:port``);
    ``ValueError`` for a line not in ``LOG_FORMAT``."""
    parts = line.rstrip("\n").split("\t")
    if len(parts) != FIELDS:
        raise ValueError(f"expected {FIELDS} tab-separated fields: {line!r}")
    msec, status, method, uri, body, sent, content_type = parts
    return LogLine(
        time=float(msec),
        status=int(status),
        method=method,
        url=origin + uri,
        body_bytes=int(body),
        bytes_sent=int(sent),
        content_type="" if content_type == "-" else content_type,
    )


def parse_lines(text: str, origin: str) -> list[LogLine]:
    """Every response logged in *text* (blank lines skipped)."""
    return [parse_line(line, origin) for line in text.splitlines() if line.strip()]


@dataclass(frozen=True, slots=True)
class Fetched:
    """What one crawl fetched, read from the access logs of every site."""

    responses: int
    html_pages: frozenset[str]
    non_html: int
    statuses: dict[int, int]
    errors: tuple[str, ...]  # URLs answered 4xx or 5xx, sorted
    bytes_sent: int
    first: float | None
    last: float | None

    @property
    def seconds(self) -> float:
        """From the first response to the last (0 with fewer than two)."""
        if self.first is None or self.last is None:
            return 0.0
        return self.last - self.first


def fetched(lines: Iterable[LogLine]) -> Fetched:
    """The crawl whose responses are *lines*: counts, HTML set, time span.

    ``non_html`` counts every response that is not an HTML page: other media
    types, and any status but 200 (robots.txt's 404 among them).
    """
    lines = list(lines)
    statuses: dict[int, int] = {}
    for line in lines:
        statuses[line.status] = statuses.get(line.status, 0) + 1
    html = frozenset(line.url for line in lines if line.is_html_page)
    times = [line.time for line in lines]
    return Fetched(
        responses=len(lines),
        html_pages=html,
        non_html=sum(1 for line in lines if not line.is_html_page),
        statuses=dict(sorted(statuses.items())),
        errors=tuple(sorted({line.url for line in lines if line.status >= 400})),
        bytes_sent=sum(line.bytes_sent for line in lines),
        first=min(times, default=None),
        last=max(times, default=None),
    )


@dataclass(frozen=True, slots=True)
class Coverage:
    """A crawl's HTML pages against a reference set (wget's)."""

    missing: tuple[str, ...]  # in the reference, not in the crawl; sorted
    extra: tuple[str, ...]  # in the crawl, not in the reference; sorted


def coverage(pages: frozenset[str], reference: frozenset[str]) -> Coverage:
    """What *pages* lacks of *reference*, and what it has beyond it."""
    return Coverage(
        missing=tuple(sorted(reference - pages)),
        extra=tuple(sorted(pages - reference)),
    )
