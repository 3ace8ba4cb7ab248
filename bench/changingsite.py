"""A simulated changing site on loopback: every page changes as a Poisson process.

``python -m bench.changingsite --hosts 4 --pages 50 --seed 1 --log FILE``

Host *i* listens on 127.0.0.(2+i), all hosts on one port. Each host's ``/`` is an index
linking its pages ``/p/1.html`` .. ``/p/P.html``; the index never changes. Each page
has a change rate drawn from a Web-like mix (``MIX``: many pages never or rarely
change, some often, a few very fast), and its change times are drawn in advance from
the seed, as offsets from the site's start (``--start``, else the moment it starts):
a site restarted with the same seed replays the same schedule relative to its start,
so every crawl of a benchmark sees the same changes. ``version_at`` says which version
of a page is current at any moment; the benchmark measures freshness with it.

A page's body (2-5 KB of HTML) names its version; it carries ``ETag: "v<version>"``
and the ``Last-Modified`` of the version's start, and a matching ``If-None-Match``
(or, without one, ``If-Modified-Since``) gets a 304 without a body. ``--validators
none`` sends neither header. robots.txt is a 404 (everything allowed). Every response
is logged as a JSON line (time, host, path, status, version served, bytes sent), after
a first line that gives the start time and the schedule's parameters.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import email.utils
import functools
import json
import math
import random
import signal
import sys
import time
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tests.site import FILLER_TEXT, bind_all, host_address, parse_head

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tests.site import Request

MAX_HEAD_BYTES = 64 * 1024
DEFAULT_HORIZON = 3600.0
# The index and version 1 of every page date from a day before the site's start.
BEFORE_START = 86400.0
# (share of pages, mean seconds between changes; None: never changes). Each page's
# mean is drawn log-uniformly within a factor SPREAD of its class's.
MIX: tuple[tuple[float, float | None], ...] = (
    (0.40, None),
    (0.20, 1800.0),
    (0.15, 600.0),
    (0.12, 180.0),
    (0.08, 60.0),
    (0.03, 15.0),
    (0.02, 4.0),
)
SPREAD = 2.0
BODY_MIN, BODY_MAX = 2000, 5000
VALIDATORS = ("both", "etag", "last-modified", "none")
WORDS = tuple(FILLER_TEXT.split())


@dataclass(frozen=True)
class PageSchedule:
    """One page's change rate (changes a second, 0: never), its change times (offsets
    from the site's start, ascending) and its body size."""

    rate: float
    changes: tuple[float, ...]
    size: int


def draw_rate(rng: random.Random) -> float:
    """A change rate from ``MIX``: 0 for a page that never changes."""
    mean: float | None = rng.choices([m for _, m in MIX], weights=[s for s, _ in MIX])[
        0
    ]
    if mean is None:
        return 0.0
    return 1.0 / (mean * math.pow(SPREAD, rng.uniform(-1.0, 1.0)))


def page_schedule(seed: int, host: int, page: int, horizon: float) -> PageSchedule:
    """The schedule of *page* of *host*: the same for the same seed, whatever the
    site's size (each page draws from its own generator)."""
    rng = random.Random(f"changing:{seed}:{host}:{page}")
    rate = draw_rate(rng)
    size = rng.randint(BODY_MIN, BODY_MAX)
    changes: list[float] = []
    t = 0.0
    while rate > 0:
        t += rng.expovariate(rate)
        if t > horizon:
            break
        changes.append(t)
    return PageSchedule(rate, tuple(changes), size)


def site_schedule(
    seed: int, hosts: int, pages: int, horizon: float
) -> dict[tuple[int, int], PageSchedule]:
    """Every page's schedule, keyed by (host, page); pages are numbered from 1."""
    return {
        (h, j): page_schedule(seed, h, j, horizon)
        for h in range(hosts)
        for j in range(1, pages + 1)
    }


def version_at(changes: Sequence[float], offset: float) -> int:
    """The version current *offset* seconds after the start: 1, plus one for each
    change at or before it."""
    return 1 + bisect.bisect_right(changes, offset)


def version_start(changes: Sequence[float], version: int) -> float:
    """Offset at which *version* became current (version 1: ``-BEFORE_START``)."""
    return -BEFORE_START if version <= 1 else changes[version - 2]


def page_path(page: int) -> str:
    return f"/p/{page}.html"


def page_number(path: str) -> int | None:
    """The page a path names (0: the index), or None; only canonical spellings."""
    if path == "/":
        return 0
    digits = path.removeprefix("/p/").removesuffix(".html")
    if not path.startswith("/p/") or not path.endswith(".html"):
        return None
    if not digits.isdigit() or digits != str(int(digits)):
        return None
    return int(digits)


def http_date(epoch: float) -> str:
    return email.utils.formatdate(math.floor(epoch), usegmt=True)


def not_modified(
    headers: dict[str, str], etag: str | None, modified: float | None
) -> bool:
    """Whether a conditional GET matches (RFC 9110: If-None-Match, when sent, decides
    alone; If-Modified-Since compares whole seconds)."""
    if "if-none-match" in headers:
        tags = [
            t.strip().removeprefix("W/") for t in headers["if-none-match"].split(",")
        ]
        return etag is not None and ("*" in tags or etag in tags)
    since = headers.get("if-modified-since")
    if since is None or modified is None:
        return False
    try:
        parsed = email.utils.parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False
    return math.floor(modified) <= parsed.timestamp()


def _filler(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        words.append(rng.choice(WORDS))
        length += len(words[-1]) + 1
    return " ".join(words)[:size]


@functools.lru_cache(maxsize=8192)
def page_body(seed: int, host: int, page: int, version: int, size: int) -> bytes:
    """The HTML of one version of a page: about *size* bytes, naming its version and
    linking only to its host's index."""
    rng = random.Random(f"body:{seed}:{host}:{page}:{version}")
    head = (
        f"<!DOCTYPE html>\n<html><head><title>host {host} page {page} version "
        f"{version}</title></head>\n<body><h1>Page {page}</h1>\n"
        f'<p class="version">version {version}</p>\n<p><a href="/">index</a></p>\n<p>'
    )
    tail = "</p>\n</body></html>\n"
    text = head + _filler(rng, max(0, size - len(head) - len(tail))) + tail
    return text.encode("utf-8")


def index_body(host: int, pages: int) -> bytes:
    links = "".join(
        f'<li><a href="{page_path(j)}">page {j}</a></li>\n' for j in range(1, pages + 1)
    )
    return (
        f"<!DOCTYPE html>\n<html><head><title>host {host}</title></head>\n"
        f"<body><ul>\n{links}</ul></body></html>\n"
    ).encode()


@dataclass(frozen=True)
class Answer:
    """A response: status, body, headers, and the page version it stands for."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...]
    version: int | None


NOT_FOUND = Answer(404, b"not found\n", (("Content-Type", "text/plain"),), None)


class ChangingSite:
    """Answers requests from the schedule and logs every response."""

    def __init__(
        self, args: argparse.Namespace, start: float, log: IO[str] | None
    ) -> None:
        self.seed: int = args.seed
        self.pages: int = args.pages
        self.validators: str = args.validators
        self.start = start
        self.schedule = site_schedule(args.seed, args.hosts, args.pages, args.horizon)
        self.log = log
        self.writers: set[asyncio.StreamWriter] = set()

    def answer(self, host: int, request: Request, now: float) -> Answer:
        """The answer to *request* on *host* at epoch *now*."""
        page = page_number(request.target)
        if request.method not in ("GET", "HEAD") or page is None or page > self.pages:
            return NOT_FOUND
        if page == 0:
            body, version, modified = index_body(host, self.pages), 1, -BEFORE_START
        else:
            plan = self.schedule[host, page]
            version = version_at(plan.changes, now - self.start)
            modified = version_start(plan.changes, version)
            body = page_body(self.seed, host, page, version, plan.size)
        etag = f'"v{version}"' if self.validators in ("both", "etag") else None
        stamp = (
            self.start + modified
            if self.validators in ("both", "last-modified")
            else None
        )
        headers = [("Content-Type", "text/html; charset=utf-8")]
        if etag is not None:
            headers.append(("ETag", etag))
        if stamp is not None:
            headers.append(("Last-Modified", http_date(stamp)))
        if not_modified(request.headers, etag, stamp):
            return Answer(304, b"", tuple(headers[1:]), version)
        return Answer(200, body, tuple(headers), version)

    def record(
        self, now: float, host: int, path: str, answer: Answer, sent: int
    ) -> None:
        if self.log is None:
            return
        entry = {
            "t": round(now, 6),
            "host": host,
            "path": path,
            "status": answer.status,
            "version": answer.version,
            "bytes": sent,
        }
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()

    async def serve_connection(
        self, host: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Answer requests on one keep-alive connection until it closes."""
        self.writers.add(writer)
        try:
            while await self._serve_one(host, reader, writer):
                await writer.drain()
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):
            pass
        finally:
            self.writers.discard(writer)
            writer.close()

    async def _serve_one(
        self, host: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        now = time.time()
        request = parse_head(head)
        if request is None:
            return False
        answer = self.answer(host, request, now)
        data = encode(answer, request)
        writer.write(data)
        self.record(now, host, request.target, answer, len(data))
        return request.keep_alive


def encode(answer: Answer, request: Request) -> bytes:
    """Status line, headers and body (none for HEAD and 304)."""
    body = b"" if request.method == "HEAD" else answer.body
    lines = [f"HTTP/1.1 {answer.status} {HTTPStatus(answer.status).phrase}"]
    lines += [f"{name}: {value}" for name, value in answer.headers]
    if answer.status != 304:
        lines.append(f"Content-Length: {len(answer.body)}")
    lines.append("Connection: " + ("keep-alive" if request.keep_alive else "close"))
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def serve(args: argparse.Namespace, log: IO[str] | None) -> None:
    """Bind every host, log the start, announce the URLs, serve until signalled."""
    sockets = bind_all([host_address(i) for i in range(args.hosts)], args.port)
    port: int = sockets[0].getsockname()[1]
    start = args.start if args.start is not None else time.time()
    site = ChangingSite(args, start, log)
    servers = [
        await asyncio.start_server(
            functools.partial(site.serve_connection, i), sock=sock, limit=MAX_HEAD_BYTES
        )
        for i, sock in enumerate(sockets)
    ]
    hosts = [f"{host_address(i)}:{port}" for i in range(args.hosts)]
    line = {
        "event": "start", "t0": start, "seed": args.seed, "hosts": args.hosts,
        "pages": args.pages, "horizon": args.horizon, "validators": args.validators,
        "port": port, "host_names": hosts,
    }  # fmt: skip
    if log is not None:
        log.write(json.dumps(line) + "\n")
        log.flush()
    sys.stdout.write(json.dumps(line | {"seeds": [f"http://{h}/" for h in hosts]}))
    sys.stdout.write("\n")
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for server in servers:
        server.close()
    for writer in list(site.writers):
        writer.transport.abort()
    await asyncio.sleep(0)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages", type=int, default=50, help="pages a host")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", type=Path, default=None)
    parser.add_argument(
        "--start", type=float, default=None, help="epoch of the schedule's start"
    )
    parser.add_argument(
        "--horizon",
        type=float,
        default=DEFAULT_HORIZON,
        help="seconds after the start past which pages stop changing",
    )
    parser.add_argument("--validators", choices=VALIDATORS, default="both")
    parser.add_argument(
        "--no-validators",
        dest="validators",
        action="store_const",
        const="none",
        help="send neither ETag nor Last-Modified (same as --validators none)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.hosts <= 253 or args.pages < 1 or args.horizon <= 0:
        parser.error("need 1 <= --hosts <= 253, --pages >= 1 and --horizon > 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with contextlib.ExitStack() as stack:
        log = (
            stack.enter_context(args.log.open("a", encoding="utf-8"))
            if args.log
            else None
        )
        asyncio.run(serve(args, log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
