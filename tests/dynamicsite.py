"""Pages of the test site that need JavaScript to show their links (--behave).

A dynamic host's pages carry no ``<a href>`` in their HTML: a script writes the links
into the DOM after load (``script``), a named function the page never calls fetches
them as JSON from the same host (``lazy:NAME``), or scrolling to the end of the page
adds them (``scroll``). A ``static`` host has its links in the HTML as usual. A
``mixed`` host is static, and also serves ``/app/<page>.html`` pages whose links a
script writes (to other ``/app/`` pages), entered from a link on its root: a host
that needs rendering for one URL pattern only. Every page of these kinds also runs a
tiny script that asks its own host for ``/_render/mark/<page>.js`` (an ``/app/``
page: ``/_render/mark/app/<page>.js``), so the site's request log tells which pages
a browser rendered (a plain HTTP fetch never runs it); ``third-party:K`` adds a
script from host K in the page's head, which a polite renderer never asks for.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

# Every path a rendered page asks its own host for starts with this: never a page.
SUBRESOURCE_PREFIX = "/_render/"
THIRD_PARTY_PATH = f"{SUBRESOURCE_PREFIX}third-party.js"
KINDS = ("static", "script", "lazy", "scroll", "mixed")
# Where a mixed host's pages for a browser live.
APP_PREFIX = "/app/"
# The ``script`` kind writes its links this many milliseconds after DOMContentLoaded.
SCRIPT_DELAY_MS = 50
# Pixels of empty space above a ``scroll`` page's links: the page is taller than any
# viewport, so only a scroll to its end reaches them.
SCROLL_SPACER_PX = 6000
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
JAVASCRIPT = "application/javascript"
# What Chromium asks a host for after a page without an icon loads.
BROWSER_ICON_PATH = "/favicon.ico"


@dataclass(frozen=True)
class Answer:
    """Status, body and content type of a subrequest's answer."""

    status: int
    body: bytes
    content_type: str


@dataclass(frozen=True)
class Dynamic:
    """How one host's pages show their links to a browser (see parse_item)."""

    kind: str = ""  # "" (a plain page, as the site serves without --behave) or KINDS
    function: str = ""  # the lazy-load function's name (kind "lazy")
    slow: float = 0.0  # seconds before the host answers its pages' subrequests
    third_party: int | None = None  # host index of a third-party script, if any


def is_subresource_path(path: str) -> bool:
    """Whether *path* is a rendered page's own subrequest (mark, links, script), or
    the icon a browser asks any page's host for."""
    return path.startswith(SUBRESOURCE_PREFIX) or path == BROWSER_ICON_PATH


def mark_path(page: int) -> str:
    """What a browser that runs page *page*'s scripts asks for: proof of a render."""
    return f"{SUBRESOURCE_PREFIX}mark/{page}.js"


def app_path(page: int) -> str:
    """Page *page* of a mixed host's pages for a browser."""
    return f"{APP_PREFIX}{page}.html"


def app_index(path: str, pages: int) -> int | None:
    """Inverse of app_path for a site of *pages* pages a host, else None."""
    digits = path.removeprefix(APP_PREFIX).removesuffix(".html")
    if not (path.startswith(APP_PREFIX) and path.endswith(".html")):
        return None
    if not digits.isdigit() or digits != str(int(digits)) or int(digits) >= pages:
        return None
    return int(digits)


def app_mark_path(page: int) -> str:
    """The render mark of a mixed host's ``/app/`` page *page*."""
    return f"{SUBRESOURCE_PREFIX}mark{APP_PREFIX}{page}.js"


def rendered_app_page(path: str) -> int | None:
    """The ``/app/`` page index an app mark path names, else None."""
    prefix = f"{SUBRESOURCE_PREFIX}mark{APP_PREFIX}"
    digits = path.removeprefix(prefix).removesuffix(".js")
    if not path.startswith(prefix) or not digits.isdigit():
        return None
    return int(digits)


def links_path(page: int) -> str:
    """The JSON list of page *page*'s links (``lazy`` pages fetch it)."""
    return f"{SUBRESOURCE_PREFIX}links/{page}.json"


def rendered_page(path: str) -> int | None:
    """The page index a mark path names (inverse of mark_path), else None."""
    prefix = f"{SUBRESOURCE_PREFIX}mark/"
    digits = path.removeprefix(prefix).removesuffix(".js")
    if not path.startswith(prefix) or not digits.isdigit():
        return None
    return int(digits)


def parse_item(name: str, value: str, current: Dynamic) -> Dynamic | None:
    """*current* with one --behave item applied, or None if the item is not ours.

    Items: ``static``, ``script``, ``scroll``, ``lazy:NAME``, ``mixed`` (the pages'
    kind, one a host); ``slow:S`` (the page's subrequests answer after S seconds);
    ``third-party:K`` (the page's head loads a script from host K). ValueError if
    malformed.
    """
    if name in KINDS:
        if current.kind:
            raise ValueError(
                f"--behave: one page kind a host; got {current.kind} and {name}"
            )
        if name == "lazy" and not _IDENTIFIER.fullmatch(value):
            raise ValueError(
                f"--behave: lazy wants a JavaScript function name, got {value!r}"
            )
        if name != "lazy" and value:
            raise ValueError(f"--behave: {name} takes no value, got {value!r}")
        return dataclasses.replace(current, kind=name, function=value)
    if name == "slow":
        seconds = float(value) if value.replace(".", "", 1).isdigit() else -1.0
        if seconds < 0:
            raise ValueError(f"--behave: slow wants seconds >= 0, got {value!r}")
        return dataclasses.replace(current, slow=seconds)
    if name == "third-party":
        if not value.isdigit():
            raise ValueError(f"--behave: third-party wants a host index, got {value!r}")
        return dataclasses.replace(current, third_party=int(value))
    return None


def page_html(
    dynamic: Dynamic,
    *,
    page: int,
    title: str,
    hrefs: list[str],
    filler: str,
    third_party_url: str = "",
    mark: str = "",
) -> str:
    """The HTML of page *page* of a host of this *dynamic* kind (*mark*: its render
    mark's path, if not ``mark_path(page)``)."""
    head = f'<script src="{third_party_url}"></script>' if third_party_url else ""
    static = hrefs if dynamic.kind in ("static", "mixed") else []
    items = "".join(
        f'<li><a href="{href}">link {k}</a></li>\n' for k, href in enumerate(static)
    )
    spacer = (
        f'<div style="height: {SCROLL_SPACER_PX}px"></div>\n'
        if dynamic.kind == "scroll"
        else ""
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f'<title>{title}</title><link rel="icon" href="data:,">{head}</head>\n'
        f"<body><h1>{title}</h1>\n"
        f'{spacer}<ul id="links">\n{items}</ul>\n<p>{filler}</p>\n'
        f"<script>\n{page_script(dynamic, page, hrefs, mark or mark_path(page))}"
        "</script>\n</body></html>\n"
    )


def page_script(dynamic: Dynamic, page: int, hrefs: list[str], mark: str) -> str:
    """The inline script: the render mark, then what writes the links.

    The mark is written in as a parser-blocking script, so the page's load waits
    for it: a mark in the log means the page was in a browser until then at least.

    The links a script writes are base64 in the HTML, so no URL of them shows in
    what a plain fetch gets.
    """
    hidden = base64.b64encode(json.dumps(hrefs).encode()).decode()
    show = f'add(JSON.parse(atob("{hidden}")));'
    writers = {
        "static": "",
        "mixed": "",
        "script": (
            'document.addEventListener("DOMContentLoaded", function () {\n'
            f"  setTimeout(function () {{ {show} }}, {SCRIPT_DELAY_MS});\n}});\n"
        ),
        "lazy": (
            f"window.{dynamic.function} = function () {{\n"
            f'  return fetch("{links_path(page)}")\n'
            "    .then(function (answer) { return answer.json(); })\n"
            "    .then(function (data) { add(data.links); });\n};\n"
        ),
        "scroll": (
            "var shown = false;\n"
            'window.addEventListener("scroll", function () {\n'
            "  var end = document.documentElement.scrollHeight - 2;\n"
            "  if (shown || window.innerHeight + window.scrollY < end) { return; }\n"
            f"  shown = true; {show}\n}});\n"
        ),
    }
    return (
        f"document.write('<script src=\"{mark}\"><\\/script>');\n"
        "function add(links) {\n"
        '  var list = document.getElementById("links");\n'
        "  links.forEach(function (href, k) {\n"
        '    var item = document.createElement("li");\n'
        '    var anchor = document.createElement("a");\n'
        '    anchor.href = href; anchor.textContent = "link " + k;\n'
        "    item.appendChild(anchor); list.appendChild(item);\n  });\n}\n"
        f"{writers[dynamic.kind]}"
    )


def subresource(path: str, hrefs: Callable[[int], list[str] | None]) -> Answer:
    """The answer to a rendered page's subrequest *path*; *hrefs* gives a page's
    links (None: no such page)."""
    if path == THIRD_PARTY_PATH:
        return Answer(200, b"/* third party */\n", JAVASCRIPT)
    page = rendered_page(path)
    if page is None:
        page = rendered_app_page(path)
    if page is not None and hrefs(page) is not None:
        return Answer(200, f"/* rendered {page} */\n".encode(), JAVASCRIPT)
    prefix = f"{SUBRESOURCE_PREFIX}links/"
    digits = path.removeprefix(prefix).removesuffix(".json")
    found = hrefs(int(digits)) if path.startswith(prefix) and digits.isdigit() else None
    if found is None:
        return Answer(404, b"not found\n", "text/plain; charset=utf-8")
    body = json.dumps({"links": found}).encode()
    return Answer(200, body, "application/json")
