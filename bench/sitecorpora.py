"""Synthetic sites of known kind for ``bench.sitestrategy``: portals and specialised
sites, written as static HTML for nginx (``bench.nginxsites``) to serve on loopback.

Every site knows every other site's origin before it is written, so its outbound
links name real loopback hosts of the benchmark (a crawl confined to the seeds'
hosts fetches them, and never leaves loopback). Deterministic: one seed a site.

- ``portal``: a home page, sections and articles; every page links to a handful of
  its own pages and to many other sites (their home pages and portal pages), as a
  news portal or a web directory does. Shallow (articles two links from home).
- ``archive``: a portal whose "older" pages form a long chain (a link aggregator's
  pagination): as deep as a manual, but most links still leave: a portal.
- ``manual``: a tree of chapters, sections and pages (a reference manual), each page
  linking its parent, its children, the previous and next page in reading order,
  and rarely another site: specialised and deep.
"""

from __future__ import annotations

import html
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit " * 20


@dataclass(frozen=True, slots=True)
class Synthetic:
    """A synthetic site to write: its name, kind and hand label."""

    name: str
    kind: str  # portal | archive | manual
    label: str  # portal | specialised
    seed: int


# The synthetic part of the hand-labelled set.
SYNTHETIC: tuple[Synthetic, ...] = (
    *(Synthetic(f"portal-{i}", "portal", "portal", i) for i in range(1, 5)),
    *(Synthetic(f"archive-{i}", "archive", "portal", 10 + i) for i in range(1, 3)),
    *(Synthetic(f"manual-{i}", "manual", "specialised", 20 + i) for i in range(1, 4)),
)


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """Where outbound links may point: other sites' home pages, and pages of
    portals (what portals link to)."""

    homes: Sequence[str]
    portal_pages: Sequence[str]

    def pick(self, rng: random.Random, count: int, own: str) -> list[str]:
        """*count* links off the site whose origin is *own*: half to home pages."""
        homes = [url for url in self.homes if not url.startswith(own)]
        pages = [url for url in self.portal_pages if not url.startswith(own)] or homes
        return [
            rng.choice(homes if rng.random() < 0.5 else pages) for _ in range(count)
        ]


def page(title: str, links: Sequence[str]) -> str:
    """An HTML page with *title* and a list of *links*."""
    items = "".join(
        f'<li><a href="{html.escape(url)}">link {index}</a></li>\n'
        for index, url in enumerate(links)
    )
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title></head>\n<body><h1>{html.escape(title)}</h1>\n<ul>\n{items}</ul>\n"
        f"<p>{FILLER}</p></body></html>\n"
    )


def portal_paths(sections: int = 8, articles: int = 6) -> list[str]:
    """Every page path of a portal: home, sections, articles."""
    paths = ["/"]
    paths += [f"/section/{s}.html" for s in range(sections)]
    paths += [f"/a/{s}-{a}.html" for s in range(sections) for a in range(articles)]
    return paths


def write_portal(root: Path, origin: str, elsewhere: Elsewhere, seed: int) -> int:
    """A news portal: home -> 8 sections -> 6 articles each; outbound links on every
    page (20 on home and articles, 15 on sections). Returns its pages."""
    rng = random.Random(seed)
    sections, articles = 8, 6
    nav = [f"/section/{s}.html" for s in range(sections)]
    _write(root, "/", page("home", ["/", *nav, *elsewhere.pick(rng, 20, origin)]))
    for s in range(sections):
        own = [f"/a/{s}-{a}.html" for a in range(articles)]
        out = elsewhere.pick(rng, 15, origin)
        _write(root, nav[s], page(f"section {s}", ["/", *nav, *own, *out]))
        for a in range(articles):
            related = [f"/a/{s}-{rng.randrange(articles)}.html" for _ in range(2)]
            links = ["/", nav[s], *related, *elsewhere.pick(rng, 20, origin)]
            _write(root, own[a], page(f"article {s}-{a}", links))
    return 1 + sections * (1 + articles)


def write_archive(root: Path, origin: str, elsewhere: Elsewhere, seed: int) -> int:
    """A link aggregator: home and 11 "older" pages in a chain, 12 outbound links
    each, and a few item pages off each. Returns its pages."""
    rng = random.Random(seed)
    chain = ["/", *(f"/older/{n}.html" for n in range(1, 12))]
    count = 0
    for index, path in enumerate(chain):
        items = [f"/item/{index}-{k}.html" for k in range(3)]
        near = [chain[index - 1]] if index else []
        near += [chain[index + 1]] if index + 1 < len(chain) else []
        links = ["/", *near, *items, *elsewhere.pick(rng, 12, origin)]
        _write(root, path, page(f"page {index}", links))
        for item in items:
            _write(root, item, page(item, [path, *elsewhere.pick(rng, 8, origin)]))
        count += 1 + len(items)
    return count


def write_manual(root: Path, origin: str, elsewhere: Elsewhere, seed: int) -> int:
    """A reference manual: 4 chapters x 3 sections x 3 subsections x 3 pages, each
    page linking its parent, children, previous and next; one page in four links
    another site. Returns its pages."""
    rng = random.Random(seed)
    tree: dict[str, list[str]] = {"/": []}
    order = ["/"]
    _grow(tree, order, "/", "", (4, 3, 3, 3))
    parents = {child: parent for parent, kids in tree.items() for child in kids}
    for index, path in enumerate(order):
        links = ["/"] + ([parents[path]] if path in parents else []) + tree[path]
        links += [order[i] for i in (index - 1, index + 1) if 0 <= i < len(order)]
        if rng.random() < 0.25:
            links += elsewhere.pick(rng, 1, origin)
        _write(root, path, page(f"manual {path}", links))
    return len(order)


def _grow(
    tree: dict[str, list[str]],
    order: list[str],
    parent: str,
    stem: str,
    fan: tuple[int, ...],
) -> None:
    """Add *parent*'s children (fan[0] of them, each with its own), depth first."""
    if not fan:
        return
    for k in range(fan[0]):
        name = f"{stem}{k}" if not stem else f"{stem}.{k}"
        path = f"/m/{name}.html"
        tree[parent].append(path)
        tree[path] = []
        order.append(path)
        _grow(tree, order, path, name, fan[1:])


WRITERS = {"portal": write_portal, "archive": write_archive, "manual": write_manual}


def write_site(site: Synthetic, root: Path, origin: str, elsewhere: Elsewhere) -> int:
    """Write *site* under *root* (served at *origin*); its number of pages."""
    return WRITERS[site.kind](root, origin, elsewhere, site.seed)


def portal_pages(origin: str) -> list[str]:
    return [origin + path for path in portal_paths()]


def _write(root: Path, path: str, text: str) -> None:
    target = root / (path.lstrip("/") or "index.html")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
