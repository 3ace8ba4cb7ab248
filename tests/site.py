"""Local multi-host HTTP test site with a deterministic link graph."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import errno
import functools
import html
import json
import math
import random
import signal
import socket
import sys
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from tests import dynamicsite

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

MAX_HEAD_BYTES = 64 * 1024
BIND_ATTEMPTS = 20
PAGE_CACHE_SIZE = 4096
LISTEN_BACKLOG = 1024
# Seconds connection handlers get to end at shutdown before they are cancelled.
SHUTDOWN_GRACE = 2.0
FILLER_TEXT = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud "
    "exercitation ullamco laboris nisi aliquip ex ea commodo consequat"
)


@dataclass(frozen=True)
class SiteSpec:
    """Shape of the site; everything about its link graph derives from this."""

    hosts: int
    pages: int
    links: int
    cross: float
    seed: int
    port: int


def host_address(i: int) -> str:
    """Host i lives on its own loopback address so hosts are distinct per IP."""
    return f"127.0.0.{2 + i}"


def host_name(spec: SiteSpec, i: int) -> str:
    """The authority (address:port) under which host i is crawled."""
    return f"{host_address(i)}:{spec.port}"


def page_path(j: int) -> str:
    """Page 0 is the root so every host has a natural seed URL."""
    return "/" if j == 0 else f"/p/{j}.html"


def page_index(path: str, pages: int) -> int | None:
    """Inverse of page_path; rejects non-canonical spellings so URLs stay unique."""
    if path == "/":
        return 0
    if not (path.startswith("/p/") and path.endswith(".html")):
        return None
    digits = path[3:-5]
    if not digits.isdigit() or digits != str(int(digits)):
        return None
    j = int(digits)
    return j if 0 < j < pages else None


def url_of(spec: SiteSpec, host_index: int, page_index: int) -> str:
    """Full URL of a page, as the crawler should record it."""
    return f"http://{host_name(spec, host_index)}{page_path(page_index)}"


def links_of(spec: SiteSpec, host_index: int, page_index: int) -> list[tuple[int, int]]:
    """Link targets of a page: `links` random ones, then the structural ones.

    The random links go cross-host with probability `cross`; the structural
    links (next page of the same host, and from a root to the next host's
    root) guarantee that everything is reachable from host 0's root.
    """
    rng = random.Random(f"{spec.seed}:{host_index}:{page_index}")
    targets = [_random_link(spec, host_index, rng) for _ in range(spec.links)]
    if page_index + 1 < spec.pages:
        targets.append((host_index, page_index + 1))
    if page_index == 0 and host_index + 1 < spec.hosts:
        targets.append((host_index + 1, 0))
    return targets


def _random_link(
    spec: SiteSpec, host_index: int, rng: random.Random
) -> tuple[int, int]:
    """One random target; drawing order is fixed so the graph is reproducible."""
    host = host_index
    if spec.hosts > 1 and rng.random() < spec.cross:
        host = rng.randrange(spec.hosts - 1)
        host += host >= host_index
    return host, rng.randrange(spec.pages)


def bfs_depths(
    spec: SiteSpec, seeds: list[tuple[int, int]]
) -> dict[tuple[int, int], int]:
    """Shortest link depth of every page reachable from the seeds (depth 0)."""
    depths = dict.fromkeys(seeds, 0)
    queue = deque(depths)
    while queue:
        page = queue.popleft()
        for target in links_of(spec, *page):
            if target not in depths:
                depths[target] = depths[page] + 1
                queue.append(target)
    return depths


def page_html(spec: SiteSpec, host_index: int, page_index: int, filler: str) -> str:
    """HTML of a page: cross-host links absolute, same-host links relative."""
    title = f"host {host_index} page {page_index}"
    items = "".join(
        f'<li><a href="{_href(spec, host_index, target)}">link {k}</a></li>\n'
        for k, target in enumerate(links_of(spec, host_index, page_index))
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{title}</title></head>\n<body><h1>{title}</h1>\n"
        f"<ul>\n{items}</ul>\n<p>{filler}</p>\n</body></html>\n"
    )


def _href(spec: SiteSpec, host_index: int, target: tuple[int, int]) -> str:
    """Mixing absolute and relative hrefs exercises the crawler's URL joining."""
    if target[0] == host_index:
        return page_path(target[1])
    return url_of(spec, *target)


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """Parse a request log, ignoring a last line the server is still writing."""
    text = Path(path).read_text(encoding="utf-8")
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line]


@dataclass(frozen=True)
class Response:
    """What a route produces; headers common to all responses are added later."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


NOT_FOUND = Response(404, b"not found\n")
NOT_ALLOWED = Response(405, b"method not allowed\n", headers=(("Allow", "GET, HEAD"),))
# Never answered: the connection stays open until the client gives up.
HANG = Response(0, b"")
SITEMAP_XMLNS = "http://www.sitemaps.org/schemas/sitemap/0.9"
# --hostile: host 0 serves this page, linking to HOSTILE_LINKS, and answers every
# other unknown path 200 with hostile_body(target) (page store tests).
HOSTILE_INDEX = "/hostile-links.html"
HOSTILE_LINKS = [
    "/A.html", "/a.html", "/Dir/", "/dir/", "/dir", "/dir/index.html", "/dir/Page",
    "/a/b", "/a%2Fb", "/x/%2e%2e/%2e%2e/etc/passwd", "/x/../../../etc/shadow",
    "/%2fetc%2fpasswd", "/a%00b", "/C:/windows/win.ini", "/C:%5Cwindows%5Cwin.ini",
    "/..%5C..%5Cboot.ini", "/x\\..\\..\\y", "/" + "n" * 300 + ".html",
    "/na\u00efve/\u2603.html", "/caf%C3%A9", "/search?q=a/b&x=..%2F..", "/search?Q=1",
    "/con", "/AUX.html", "/file.", "/a//b", "/.hidden", "/-rf", "/x/%2e", "/index.html",
    "/@dir/+x,y", "/%2E%2E%2F%2E%2E%2Fescape",
]  # fmt: skip


def hostile_body(target: str) -> bytes:
    """The distinct page --hostile serves at *target* (as the request line has it)."""
    return f"<html><body><p>hostile {html.escape(target)}</p></body></html>".encode()


@dataclass(frozen=True)
class RobotsSpec:
    """How one host answers /robots.txt (see --robots)."""

    rules: str = ""
    status: int = 200
    hang: bool = False
    redirects: int = 0
    sitemap: bool = False
    file: str = ""
    fail: int = 0  # the first N fetches of /robots.txt fail (see fail_status)
    fail_status: int = 503  # how they fail: this status, or 0 for no answer


def parse_robots(text: str) -> tuple[int, RobotsSpec]:
    """``INDEX=ITEM;ITEM;...`` -> (host index, spec); ValueError if malformed.

    Items: ``agent:TOKEN`` starts a group (rules before any go to ``*``);
    ``disallow:P,P``, ``allow:P,P`` and ``crawl-delay:S`` add to the current group;
    ``sitemap`` lists /sitemap.xml; ``status:N`` answers N instead; ``hang`` never
    answers; ``redirect:N`` reaches the file through N redirects; ``file:PATH``
    serves PATH's bytes as the file; ``fail:N`` answers the first N fetches of
    /robots.txt 503 (``fail:N,429``: that status; ``fail:N,hang``: never), then as
    the other items say.
    """
    index, sep, items = text.partition("=")
    if not sep or not index.strip().isdigit():
        raise ValueError(f"--robots wants INDEX=ITEM;ITEM..., got {text!r}")
    lines: list[str] = []
    fields: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in items.split(";"))):
        name, _, value = (part.strip() for part in item.partition(":"))
        if name == "agent":
            lines += [""] if lines else []
            lines.append(f"User-agent: {value}")
        elif name in ("disallow", "allow", "crawl-delay"):
            if not lines:
                lines.append("User-agent: *")
            values = [value] if name == "crawl-delay" else value.split(",")
            lines += [f"{name.capitalize()}: {v}" for v in values]
        elif name in ("sitemap", "hang"):
            fields[name] = True
        elif name in ("status", "redirect"):
            fields["redirects" if name == "redirect" else name] = int(value)
        elif name == "file":
            fields["file"] = value
        elif name == "fail":
            fields["fail"], fields["fail_status"] = _robots_failures(value)
        else:
            raise ValueError(f"unknown robots item {name!r} in {text!r}")
    return int(index), RobotsSpec("\n".join(lines) + "\n" if lines else "", **fields)


def _robots_failures(value: str) -> tuple[int, int]:
    """``N``, ``N,STATUS`` or ``N,hang`` -> (N, status or 0); ValueError if bad."""
    count, _, how = (part.strip() for part in value.partition(","))
    how = how or "503"
    status = 0 if how == "hang" else int(how) if how.isdigit() else -1
    if (
        not count.isdigit()
        or int(count) < 1
        or not (status == 0 or 400 <= status < 600)
    ):
        raise ValueError(f"fail wants N[,STATUS|,hang] with N >= 1, got {value!r}")
    return int(count), status


@dataclass(frozen=True)
class Behaviour:
    """How one host answers everything but its robots.txt (see --behave)."""

    delay: float = 0.0
    flaky: bool = False
    dead: bool = False
    retry_after: float | None = None
    down: float = 0.0
    busy: float = 0.0  # seconds from the start answering 503 with Retry-After
    refuse: float = 0.0  # seconds from the start refusing connections
    limit: float = 0.0  # least seconds between two requests it accepts (429 beyond)
    # Pages whose links need JavaScript, and their render mark (tests/dynamicsite.py).
    dynamic: dynamicsite.Dynamic = field(default_factory=dynamicsite.Dynamic)


def parse_behaviour(text: str) -> tuple[int, Behaviour]:
    """``INDEX=ITEM;ITEM;...`` -> (host index, behaviour); ValueError if malformed.

    Items: ``delay:S`` answers after S seconds (a client that gives up first gets
    nothing, and the request is logged with status null); ``flaky`` never answers
    the 1st, 3rd, 5th... request (held open until the client gives up) and answers
    the others; ``dead`` never answers; ``retry-after:N`` answers the first request
    of each path 503 with ``Retry-After: N``, the later ones normally; ``down:S``
    answers every request 503 for S seconds from the host's first request, then
    normally (a host that is down for a while); ``busy:S``
    answers every request 503 with ``Retry-After`` (the seconds left) for the first S
    seconds of the site; ``refuse:S`` refuses connections (robots.txt's too) for the
    first S seconds; ``limit:S`` accepts one request every S seconds (from the arrival
    of the last one it accepted) and answers any sooner 429 without Retry-After, as
    a rate-limited server does. ``static``, ``script``, ``lazy:NAME``, ``scroll``, ``mixed``,
    ``slow:S`` and ``third-party:K`` make pages for a browser (``tests.dynamicsite.parse_item``).
    """
    index, sep, items = text.partition("=")
    if not sep or not index.strip().isdigit():
        raise ValueError(f"--behave wants INDEX=ITEM;ITEM..., got {text!r}")
    fields: dict[str, Any] = {}
    dynamic = dynamicsite.Dynamic()
    for item in filter(None, (part.strip() for part in items.split(";"))):
        name, _, value = (part.strip() for part in item.partition(":"))
        if (parsed := dynamicsite.parse_item(name, value, dynamic)) is not None:
            dynamic = parsed
        elif name in ("flaky", "dead") and not value:
            fields[name] = True
        elif name in ("delay", "retry-after", "down", "busy", "refuse", "limit"):
            try:
                seconds = float(value)
            except ValueError:
                seconds = math.nan
            if not 0 <= seconds < math.inf:
                raise ValueError(f"{name} wants seconds >= 0, got {value!r}")
            fields[name.replace("-", "_")] = seconds
        else:
            raise ValueError(f"unknown behaviour {item!r} in {text!r}")
    return int(index), Behaviour(**fields, dynamic=dynamic)


@dataclass(frozen=True)
class PageHeader:
    """A header some pages of one host send (see --header)."""

    pages: frozenset[int] | None  # None: every page
    name: str
    value: str

    def applies(self, page: int) -> bool:
        return self.pages is None or page in self.pages


def parse_header(text: str) -> tuple[int, PageHeader]:
    """``INDEX=PAGES|NAME: VALUE`` -> (host index, header); ValueError if malformed.

    PAGES is ``*`` (every page) or page numbers joined by commas (0: the root).
    """
    index, sep, rest = text.partition("=")
    pages, bar, field_line = rest.partition("|")
    name, colon, value = field_line.partition(":")
    numbers = [n.strip() for n in pages.split(",")]
    if (
        not sep
        or not index.strip().isdigit()
        or not bar
        or not colon
        or not name.strip()
        or not (pages.strip() == "*" or all(n.isdigit() for n in numbers))
    ):
        raise ValueError(f"--header wants INDEX=PAGES|NAME: VALUE, got {text!r}")
    chosen = None if pages.strip() == "*" else frozenset(int(n) for n in numbers)
    return int(index), PageHeader(chosen, name.strip(), value.strip())


def is_robots_path(path: str) -> bool:
    """robots.txt and its redirect hops, which follow --robots, never --behave."""
    return path == "/robots.txt" or path.startswith("/robots-")


@dataclass(frozen=True)
class Request:
    """The parts of a request the site cares about."""

    method: str
    target: str
    keep_alive: bool
    headers: dict[str, str]


def parse_head(head: bytes) -> Request | None:
    """Parse a request head; None means malformed, so the connection is dropped."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[1].startswith("/"):
        return None
    method, target, version = parts
    if version not in ("HTTP/1.0", "HTTP/1.1") or not method.isalpha():
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, sep, value = line.partition(":")
            if not sep:
                return None
            headers[name.strip().lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" and (
        version == "HTTP/1.1" or connection == "keep-alive"
    )
    return Request(method, target, keep_alive, headers)


def encode(response: Response, request: Request, keep_alive: bool) -> bytes:
    """Serialize a response; HEAD gets the GET headers without the body."""
    head = (
        f"HTTP/1.1 {response.status} {HTTPStatus(response.status).phrase}\r\n"
        f"Content-Type: {response.content_type}\r\n"
        f"Content-Length: {len(response.body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n"
    ) + "".join(f"{name}: {value}\r\n" for name, value in response.headers)
    body = b"" if request.method == "HEAD" else response.body
    return head.encode("latin-1") + b"\r\n" + body


class Site:
    """Serves the pages of a spec and logs every request."""

    def __init__(
        self,
        spec: SiteSpec,
        pad_min: int,
        pad_max: int,
        log: IO[str] | None,
        *,
        latency: float = 0.0,
        robots: Mapping[int, RobotsSpec] | None = None,
        behave: Mapping[int, Behaviour] | None = None,
        hostile: bool = False,
        fates: bool = False,
        headers: Sequence[tuple[int, PageHeader]] = (),
    ) -> None:
        """Build the filler corpus once so rendering a page is just slicing."""
        self.spec = spec
        self.headers = list(headers)
        self.hostile = hostile
        self.fates = fates
        self.latency = latency
        self.robots = dict(robots or {})
        self.behave = dict(behave or {})
        self.requests_seen: dict[int, int] = {}  # host -> requests (flaky hosts)
        self.refused: set[tuple[int, str]] = set()  # answered 503 once (retry-after)
        self.first_request: dict[int, float] = {}  # host -> its first request (down)
        self.last_accepted: dict[int, float] = {}  # host -> its last request (limit:S)
        self.robots_fetched: dict[int, int] = {}  # host -> /robots.txt fetches (fail:N)
        self.started = time.monotonic()  # busy:S and refuse:S count from here
        self.robots_bodies = {
            i: self._robots_body(i, r) for i, r in self.robots.items()
        }
        self.pad_min = pad_min
        self.pad_max = pad_max
        self.log = log
        self.corpus = _filler_corpus(max(2 * pad_max, 65536))
        self.page = functools.lru_cache(maxsize=PAGE_CACHE_SIZE)(self._render)
        self.writers: set[asyncio.StreamWriter] = set()

    def route(self, host_index: int, path: str) -> Response:
        """Map a path to a response; the one place new endpoints get added."""
        if is_robots_path(path):
            return self._robots(host_index, path)
        if path in ("/sitemap.xml", "/sitemap-pages.xml"):
            return self._sitemap(host_index, path)
        if path in TRAPS:
            return TRAPS[path]()
        j = page_index(path.partition("?")[0], self.spec.pages)
        if j is None and self.hostile and host_index == 0:
            return _hostile(path)
        if j is None and self.fates and host_index == 0 and path in FATE_PAGES:
            return FATE_PAGES[path]
        return NOT_FOUND if j is None else self._with_headers(host_index, j)

    def _with_headers(self, host_index: int, j: int) -> Response:
        """Page *j* with the --header fields it sends."""
        page = self.page(host_index, j)
        extra = tuple(
            (header.name, header.value)
            for index, header in self.headers
            if index == host_index and header.applies(j)
        )
        return (
            dataclasses.replace(page, headers=page.headers + extra) if extra else page
        )

    def _subresource(self, host_index: int, path: str) -> Response:
        """A rendered page's own subrequest; only pages made for a browser have them
        (the third-party script excepted, which every host serves)."""
        kind = self._dynamic(host_index).kind
        if not kind and path != dynamicsite.THIRD_PARTY_PATH:
            return NOT_FOUND
        answer = dynamicsite.subresource(
            path, functools.partial(self._hrefs, host_index)
        )
        return Response(answer.status, answer.body, answer.content_type)

    def _dynamic(self, host_index: int) -> dynamicsite.Dynamic:
        behaviour = self.behave.get(host_index)
        return behaviour.dynamic if behaviour is not None else dynamicsite.Dynamic()

    def _hrefs(self, host_index: int, j: int) -> list[str] | None:
        """The hrefs of page *j*'s links as the page writes them; None: no page j."""
        if not 0 <= j < self.spec.pages:
            return None
        targets = links_of(self.spec, host_index, j)
        return [_href(self.spec, host_index, target) for target in targets]

    def _robots_body(self, host_index: int, robots: RobotsSpec) -> bytes:
        if robots.file:
            return Path(robots.file).read_bytes()
        sitemap = f"http://{host_name(self.spec, host_index)}/sitemap.xml"
        extra = f"\nSitemap: {sitemap}\n" if robots.sitemap else ""
        return (robots.rules + extra).encode("utf-8")

    def _robots(self, host_index: int, path: str) -> Response:
        """robots.txt as --robots says: redirects (/robots-1.txt...) first, then the
        status, silence or file; 404 for a host without a spec."""
        robots = self.robots.get(host_index)
        hop: int | None = 0
        if path != "/robots.txt":
            digits = path.removeprefix("/robots-").removesuffix(".txt")
            hop = int(digits) if path.endswith(".txt") and digits.isdigit() else None
        if robots is None or hop is None or hop > robots.redirects:
            return NOT_FOUND
        if hop == 0 and robots.fail:
            fetched = self.robots_fetched[host_index] = (
                self.robots_fetched.get(host_index, 0) + 1
            )
            if fetched <= robots.fail:
                failed = Response(robots.fail_status or 503, b"robots.txt failing\n")
                return failed if robots.fail_status else HANG
        if hop < robots.redirects:
            location = f"/robots-{hop + 1}.txt"
            return Response(301, b"moved\n", headers=(("Location", location),))
        if robots.hang:
            return HANG
        if robots.status != 200:
            return Response(robots.status, b"robots.txt unavailable\n")
        return Response(200, self.robots_bodies[host_index])

    def _sitemap(self, host_index: int, path: str) -> Response:
        """/sitemap.xml: an index of /sitemap-pages.xml, which lists every page."""
        base = f"http://{host_name(self.spec, host_index)}"
        if path == "/sitemap.xml":
            root, item, urls = "sitemapindex", "sitemap", [f"{base}/sitemap-pages.xml"]
        else:
            urls = [url_of(self.spec, host_index, j) for j in range(self.spec.pages)]
            root, item = "urlset", "url"
        entries = "".join(f"<{item}><loc>{url}</loc></{item}>\n" for url in urls)
        xml = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<{root} xmlns="{SITEMAP_XMLNS}">\n{entries}</{root}>\n'
        )
        return Response(200, xml.encode("utf-8"), "application/xml")

    def _render(self, host_index: int, j: int) -> Response:
        """Render a page with deterministic filler of a per-page random size."""
        filler = self._filler(host_index, j)
        dynamic = self._dynamic(host_index)
        if dynamic.kind:
            html = self._browser_page(host_index, j, dynamic, filler)
        else:
            html = page_html(self.spec, host_index, j, filler)
        if self.fates and host_index == 0 and j == 0:
            html = html.replace("</ul>", FATE_LINKS + "</ul>", 1)
        return Response(200, html.encode("utf-8"), "text/html; charset=utf-8")

    def _filler(self, host_index: int, j: int, kind: str = "pad") -> str:
        """Page *j*'s deterministic filler, of a per-page random size; another
        *kind* of page gets a text of its own."""
        rng = random.Random(f"{kind}:{self.spec.seed}:{host_index}:{j}")
        size = rng.randint(self.pad_min, self.pad_max)
        start = rng.randrange(len(self.corpus) - size + 1)
        return self.corpus[start : start + size]

    def _app_page(self, host_index: int, j: int) -> Response:
        """Page *j* of a mixed host's ``/app/`` pages: a script writes its links, to
        the ``/app/`` pages of its same-host targets."""
        hrefs = [
            dynamicsite.app_path(page)
            for host, page in links_of(self.spec, host_index, j)
            if host == host_index
        ]
        html = dynamicsite.page_html(
            dynamicsite.Dynamic(kind="script"),
            page=j,
            title=f"host {host_index} app {j}",
            hrefs=hrefs,
            # Not page j's text: with it (and links named as page j's are) an app
            # page is a copy of page j, whose links a crawl need not follow.
            filler=self._filler(host_index, j, "app"),
            mark=dynamicsite.app_mark_path(j),
        )
        return Response(200, html.encode("utf-8"), "text/html; charset=utf-8")

    def _browser_page(
        self, host_index: int, j: int, dynamic: dynamicsite.Dynamic, filler: str
    ) -> str:
        """A page made for a browser (tests/dynamicsite.py), same links and filler."""
        third_party = (
            f"http://{host_name(self.spec, dynamic.third_party)}"
            f"{dynamicsite.THIRD_PARTY_PATH}"
            if dynamic.third_party is not None
            else ""
        )
        hrefs = self._hrefs(host_index, j) or []
        if dynamic.kind == "mixed" and j == 0:  # the way into its /app/ pages
            hrefs = [dynamicsite.app_path(0), *hrefs]
        return dynamicsite.page_html(
            dynamic,
            page=j,
            title=f"host {host_index} page {j}",
            hrefs=hrefs,
            filler=filler,
            third_party_url=third_party,
        )

    def respond(self, host_index: int, request: Request) -> Response:
        """Only GET and HEAD exist on this site; anything else is a 405. A rendered
        page's own subrequests are answered apart from every --fates or --hostile
        path."""
        if request.method not in ("GET", "HEAD"):
            return NOT_ALLOWED
        if dynamicsite.is_subresource_path(request.target):
            return self._subresource(host_index, request.target)
        app = dynamicsite.app_index(request.target, self.spec.pages)
        if app is not None and self._dynamic(host_index).kind == "mixed":
            return self._app_page(host_index, app)
        return self.route(host_index, request.target)

    def misbehave(
        self, host_index: int, request: Request, response: Response
    ) -> tuple[Response, float | None]:
        """Apply the host's --behave to *response*: what to send instead, and the
        seconds to wait first while watching for the client to give up (None: the
        usual --latency, not watched)."""
        behaviour = self.behave.get(host_index)
        if behaviour is None or is_robots_path(request.target):
            return response, None
        if (refusal := self._refusal(host_index, behaviour)) is not None:
            return refusal, None
        if behaviour.dead:
            return HANG, None
        if behaviour.flaky:
            seen = self.requests_seen[host_index] = (
                self.requests_seen.get(host_index, 0) + 1
            )
            if seen % 2 == 1:
                return HANG, None
        if behaviour.down:
            first = self.first_request.setdefault(host_index, time.monotonic())
            if time.monotonic() - first < behaviour.down:
                response = Response(503, b"down for a while\n")
        if behaviour.retry_after is not None:
            page = (host_index, request.target)
            if page not in self.refused:
                self.refused.add(page)
                header = ("Retry-After", f"{behaviour.retry_after:g}")
                response = Response(503, b"busy, retry later\n", headers=(header,))
        wait = behaviour.delay
        if dynamicsite.is_subresource_path(request.target):
            wait += behaviour.dynamic.slow
        if wait:
            return response, self.latency + wait
        return response, None

    def _refusal(self, host_index: int, behaviour: Behaviour) -> Response | None:
        """503 with Retry-After while busy:S lasts; 429 over limit:S."""
        left = behaviour.busy - (time.monotonic() - self.started)
        if left > 0:
            header = ("Retry-After", str(math.ceil(left)))
            return Response(503, b"busy, retry later\n", headers=(header,))
        if behaviour.limit and self._over_limit(host_index, behaviour.limit):
            return Response(429, b"too many requests\n")
        return None

    def _over_limit(self, host_index: int, seconds: float) -> bool:
        """Whether a request arriving now comes sooner than *seconds* after the last
        one the host accepted (limit:S); if not, it is the last accepted."""
        now = time.monotonic()
        if now - self.last_accepted.get(host_index, -math.inf) < seconds:
            return True
        self.last_accepted[host_index] = now
        return False

    def record(
        self, t: float, host_index: int, request: Request, status: int | None
    ) -> None:
        """Append a log line and flush so tests can read it while we run (status
        None: never answered)."""
        if self.log is None:
            return
        entry = {
            "t": t,
            "host": host_name(self.spec, host_index),
            "path": request.target,
            "method": request.method,
            "status": status,
            "ua": request.headers.get("user-agent"),
            "referer": request.headers.get("referer"),
            "node": request.headers.get("x-crawler-node"),
        }
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()

    async def serve_connection(
        self,
        host_index: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Answer requests on one connection until it closes or misbehaves."""
        self.writers.add(writer)
        try:
            while await self._serve_one(host_index, reader, writer):
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

    async def shutdown(self) -> None:
        """Abort live connections (held ones included), then give their handlers
        SHUTDOWN_GRACE seconds to end: cancelled handlers print tracebacks on 3.11,
        so they are cancelled only if they outlive it."""
        for writer in list(self.writers):
            writer.transport.abort()
        handlers = asyncio.all_tasks() - {asyncio.current_task()}
        if not handlers:
            return
        _done, pending = await asyncio.wait(handlers, timeout=SHUTDOWN_GRACE)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _serve_one(
        self,
        host_index: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Serve one request; returns whether the connection stays open."""
        head = await reader.readuntil(b"\r\n\r\n")
        t = time.time()
        request = parse_head(head)
        if request is None:
            return False
        response, watched = self.misbehave(
            host_index, request, self.respond(host_index, request)
        )
        if response is HANG:
            self.record(t, host_index, request, None)
            while await reader.read(MAX_HEAD_BYTES):
                pass  # never answer; wait until the client gives up and closes
            return False
        # A request body is never read, so the stream is unusable after one.
        keep_alive = request.keep_alive and not _has_body(request)
        if watched is not None:
            client = await _wait_for_client(reader, watched)
            if client == "gone":
                self.record(t, host_index, request, None)
                return False
            keep_alive = keep_alive and client == "quiet"
        elif self.latency:
            await asyncio.sleep(self.latency)
        writer.write(encode(response, request, keep_alive))
        self.record(t, host_index, request, response.status)
        return keep_alive


async def _wait_for_client(
    reader: asyncio.StreamReader, seconds: float
) -> Literal["quiet", "spoke", "gone"]:
    """Wait *seconds* before an answer, watching the connection: "gone" if the
    client hung up first, "spoke" if it sent more (a pipelined request, dropped:
    the answer then closes the connection), else "quiet"."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    spoke = False
    while (left := deadline - loop.time()) > 0:
        try:
            chunk = await asyncio.wait_for(reader.read(MAX_HEAD_BYTES), left)
        except TimeoutError:
            break
        except ConnectionError:  # reset: a client that gave up may abort
            return "gone"
        if not chunk:
            return "gone"
        spoke = True
    return "spoke" if spoke else "quiet"


def _hostile(path: str) -> Response:
    """--hostile on host 0: the index of hostile links, else a page naming *path*."""
    if path != HOSTILE_INDEX:
        return Response(200, hostile_body(path), "text/html; charset=utf-8")
    items = "".join(f'<a href="{html.escape(link)}">x</a>\n' for link in HOSTILE_LINKS)
    body = f'<html><head><meta charset="utf-8"></head><body>{items}</body></html>'
    return Response(200, body.encode(), "text/html; charset=utf-8")


# Bytes of zeros the gzip bomb inflates to, and the chunk it is compressed by.
BOMB_INFLATED = 1 << 30
_BOMB_CHUNK = 1 << 20


@functools.cache
def gzip_bomb() -> bytes:
    """About 1 MB of gzip that inflates to BOMB_INFLATED zero bytes (made once)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(_BOMB_CHUNK)
    parts = [compressor.compress(chunk) for _ in range(BOMB_INFLATED // _BOMB_CHUNK)]
    return b"".join([*parts, compressor.flush()])


def _redirect(location: str) -> Callable[[], Response]:
    return lambda: Response(302, b"moved\n", headers=(("Location", location),))


# Paths every host serves, linked from no page (tests give them as seeds): redirects
# to schemes a crawler does not fetch, and a gzip bomb served as compressed HTML.
TRAPS: dict[str, Callable[[], Response]] = {
    "/trap/redirect-javascript": _redirect("javascript:alert(1)"),
    "/trap/redirect-mailto": _redirect("mailto:x@y"),
    "/trap/gzip-bomb.html": lambda: Response(
        200,
        gzip_bomb(),
        "text/html; charset=utf-8",
        headers=(("Content-Encoding", "gzip"),),
    ),
}


# --fates: host 0 serves these (its root links to each), one page per fate or kind
# of answer a crawler must record without raising.
FATE_PAGES: dict[str, Response] = {
    "/fates/404.html": Response(404, b"not found\n"),
    "/fates/410.html": Response(410, b"gone\n"),
    "/fates/500.html": Response(500, b"server error\n"),
    "/fates/503.html": Response(503, b"busy\n", headers=(("Retry-After", "1"),)),
    "/fates/data.json": Response(
        200, b'{"a": [1, 2], "href": "/p/1.html"}', "application/json"
    ),
    "/fates/notes.txt": Response(200, b"see <a href='/p/2.html'>x</a>\n"),
    "/fates/image": Response(
        200, b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "image/png"
    ),
    # Declares UTF-16, is UTF-8 with bytes no charset decodes as declared.
    "/fates/broken.html": Response(
        200,
        b"<html><head><title>broken \xff\xfe\xc3</title></head><body>"
        b'<a href="/fates/landing.html">x</a>\x00\x81</body></html>',
        "text/html; charset=utf-16",
    ),
    # Two hops to a page linked nowhere else, and one hop to a page seen already.
    "/fates/moved.html": Response(
        301, b"moved\n", headers=(("Location", "/fates/moved-again.html"),)
    ),
    "/fates/moved-again.html": Response(
        302, b"moved\n", headers=(("Location", "/fates/landing.html"),)
    ),
    "/fates/landing.html": Response(
        200, b"<html><title>landing</title></html>", "text/html; charset=utf-8"
    ),
    "/fates/to-root.html": Response(301, b"moved\n", headers=(("Location", "/"),)),
    "/fates/big": Response(200, bytes(200_000), "application/octet-stream"),
}
FATE_LINKS = "".join(
    f'<li><a href="{path}">fate</a></li>\n'
    for path in FATE_PAGES
    if path not in ("/fates/moved-again.html", "/fates/landing.html")
)


def _has_body(request: Request) -> bool:
    """Whether the client announced a body we would have to skip."""
    length = request.headers.get("content-length", "0")
    return "transfer-encoding" in request.headers or length not in ("", "0")


def _filler_corpus(size: int) -> str:
    """Deterministic ASCII word soup that page filler is sliced from."""
    rng = random.Random("filler")
    vocabulary = FILLER_TEXT.split()
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(vocabulary)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def bind_all(addresses: Sequence[str], port: int) -> list[socket.socket]:
    """Bind every address on one port; port 0 retries until some port fits all."""
    for _ in range(BIND_ATTEMPTS if port == 0 else 1):
        try:
            return _bind_same_port(addresses, port)
        except OSError as exc:
            if port != 0 or exc.errno != errno.EADDRINUSE:
                raise
    raise OSError(errno.EADDRINUSE, "no port free on all host addresses")


def _bind_same_port(addresses: Sequence[str], port: int) -> list[socket.socket]:
    """Bind the first address (choosing the port if 0), then the rest on it."""
    sockets: list[socket.socket] = []
    try:
        for address in addresses:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address, port))
            sock.listen(LISTEN_BACKLOG)
            port = sock.getsockname()[1]
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


async def serve(args: argparse.Namespace, log: IO[str] | None) -> None:
    """Bind, announce the addresses on stdout, then serve until signalled."""
    sockets = bind_all([host_address(i) for i in range(args.hosts)], args.port)
    port: int = sockets[0].getsockname()[1]
    spec = SiteSpec(args.hosts, args.pages, args.links, args.cross, args.seed, port)
    site = Site(
        spec,
        args.pad_min,
        args.pad_max,
        log,
        latency=args.latency,
        robots=dict(args.robots),
        behave=dict(args.behave),
        hostile=args.hostile,
        fates=args.fates,
        headers=args.header,
    )
    refuse = {i: b.refuse for i, b in site.behave.items() if b.refuse}
    for i in refuse:
        sockets[i] = _unlisten(sockets[i])
    servers = [
        await _start_server(site, i, sock)
        for i, sock in enumerate(sockets)
        if i not in refuse
    ]
    later = [
        asyncio.create_task(_serve_after(seconds, site, i, sockets[i], servers))
        for i, seconds in refuse.items()
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    announce(spec)
    await stop.wait()
    for task in later:
        task.cancel()
    await asyncio.gather(*later, return_exceptions=True)
    for server in servers:
        server.close()
    await site.shutdown()


async def _start_server(site: Site, i: int, sock: socket.socket) -> asyncio.Server:
    """Serve host *i* on its listening socket."""
    return await asyncio.start_server(
        functools.partial(site.serve_connection, i),
        sock=sock,
        limit=MAX_HEAD_BYTES,
        backlog=LISTEN_BACKLOG,
    )


def _unlisten(sock: socket.socket) -> socket.socket:
    """A socket bound to *sock*'s address that does not listen (refuse:S): the kernel
    refuses connections to it, and the port stays ours until it listens."""
    address = sock.getsockname()
    sock.close()
    quiet = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    quiet.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    quiet.bind(address)
    return quiet


async def _serve_after(
    seconds: float,
    site: Site,
    i: int,
    sock: socket.socket,
    servers: list[asyncio.Server],
) -> None:
    """Start listening on host *i* once *seconds* from the site's start have passed."""
    await asyncio.sleep(max(0.0, seconds - (time.monotonic() - site.started)))
    sock.listen(LISTEN_BACKLOG)
    servers.append(await _start_server(site, i, sock))


def announce(spec: SiteSpec) -> None:
    """The single JSON line on stdout is how the parent learns the port."""
    line = {
        "port": spec.port,
        "hosts": [host_name(spec, i) for i in range(spec.hosts)],
        "seeds": [url_of(spec, i, 0) for i in range(spec.hosts)],
    }
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options; bounds keep every host on a valid loopback address."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--links", type=int, default=5)
    parser.add_argument("--cross", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", default=None)
    parser.add_argument("--pad-min", type=int, default=2000)
    parser.add_argument("--pad-max", type=int, default=5000)
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds before each answer"
    )
    parser.add_argument(
        "--robots",
        action="append",
        default=[],
        metavar="INDEX=ITEM;ITEM...",
        help=(
            "robots.txt of host INDEX (others answer 404), e.g. "
            "'0=disallow:/p/1.html,/p/2.html;crawl-delay:0.5', '1=status:503', "
            "'2=hang', '3=file:PATH', '4=redirect:2;agent:crawler;disallow:/', "
            "'5=sitemap', '6=fail:2,429'"
        ),
    )
    parser.add_argument(
        "--behave",
        action="append",
        default=[],
        metavar="INDEX=ITEM;ITEM...",
        help=(
            "how host INDEX answers all but robots.txt (others answer at once), "
            "e.g. '0=delay:1.5', '1=flaky', '2=dead', '3=retry-after:2', "
            "'4=busy:20', '5=refuse:20', '6=limit:0.5'; pages for a browser: '0=script', "
            "'1=lazy:loadMore;slow:2', '2=scroll;third-party:5', '3=static', "
            "'4=mixed'"
        ),
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="INDEX=PAGES|NAME: VALUE",
        help="a header the pages PAGES (* or numbers joined by commas) of host "
        "INDEX send, e.g. '0=1,2|Content-Usage: train-ai=n'",
    )
    parser.add_argument(
        "--hostile",
        action="store_true",
        help=f"host 0 serves {HOSTILE_INDEX} (hostile links) and 200 for any path",
    )
    parser.add_argument(
        "--fates",
        action="store_true",
        help="host 0 serves FATE_PAGES (errors, redirects, non-HTML), linked "
        "from its root",
    )
    args = parser.parse_args(argv)
    try:
        args.robots = [parse_robots(text) for text in args.robots]
        args.behave = [parse_behaviour(text) for text in args.behave]
        args.header = [parse_header(text) for text in args.header]
    except ValueError as exc:
        parser.error(str(exc))
    for option in ("robots", "behave", "header"):
        if any(index >= args.hosts for index, _ in getattr(args, option)):
            parser.error(f"--{option} INDEX must name one of the --hosts")
    third_parties = [b.dynamic.third_party for _, b in args.behave]
    if any(k is not None and k >= args.hosts for k in third_parties):
        parser.error("--behave third-party:K must name one of the --hosts")
    if not 1 <= args.hosts <= 253:
        parser.error("--hosts must be between 1 and 253")
    if args.pages < 1 or args.links < 0 or not 0.0 <= args.cross <= 1.0:
        parser.error("need --pages >= 1, --links >= 0 and 0 <= --cross <= 1")
    if not 0 <= args.pad_min <= args.pad_max:
        parser.error("need 0 <= --pad-min <= --pad-max")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `python -m tests.site`."""
    args = parse_args(argv)
    with contextlib.ExitStack() as stack:
        log = (
            stack.enter_context(Path(args.log).open("a", encoding="utf-8"))
            if args.log
            else None
        )
        asyncio.run(serve(args, log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
