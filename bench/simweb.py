"""Simulated webs with a known PageRank: the graphs the importance benchmarks crawl.

A web is hundreds of hosts of power-law sizes. Each site is a navigation tree (home
-> sections -> subsections -> articles) whose articles form "next" chains and
paginated listings (``?page=N``), so much of a site sits deep. Portals are flat
and link out to many sites; specialised sites are deep (long chains, few links
into them from their own listings). Links between hosts follow preferential
attachment: a link goes to a host's home page (the host chosen by its in-links so
far) or to any page (chosen by its in-links so far), so in-degree is power-law and
some deep articles become popular. Every host has a name (``www.<word>-<n>.<tld>``)
and its own loopback address, so a benchmark can serve each on 127.77.x.y.

PageRank: power iteration, damping 0.85, dangling pages' mass spread uniformly.
Pure Python; every draw from one seeded ``random.Random``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

DAMPING = 0.85
SIZE_FILL = 0.8  # listings and variants add about a fifth to the drawn site sizes
TLDS = (("com", 50), ("org", 14), ("net", 10), ("de", 8), ("edu", 5), ("info", 5),
        ("io", 4), ("co.uk", 4))  # fmt: skip
WORDS = ("river", "news", "blog", "shop", "wiki", "lab", "forum", "docs", "city",
         "music", "film", "travel", "garden", "code", "health", "sport", "books",
         "food", "photo", "games", "science", "art", "auto", "home")  # fmt: skip
SLUGS = ("notes", "guide", "review", "story", "report", "howto", "list", "update",
         "intro", "faq", "recipe", "tour", "essay", "digest", "letter")  # fmt: skip


@dataclass(frozen=True)
class Shape:
    """Parameters of one family of webs; *seed* makes a web of it reproducible."""

    name: str
    pages: int = 4000  # about: site sizes are drawn, then scaled to this total
    hosts: int = 200
    portal_share: float = 0.06  # hosts that are portals (flat, many links out)
    deep_share: float = 0.25  # hosts that are specialised (deep chains)
    size_exponent: float = 1.1  # Zipf exponent of site sizes
    cross_links: float = 1.5  # mean links to other hosts of an ordinary page
    portal_links: int = 20  # links to other hosts of a portal page
    home_bias: float = 0.45  # share of links to other hosts aimed at a home page
    attach_offset: float = 1.0  # preferential attachment: weight = in-links + this
    related: float = 1.5  # mean links from an article to other articles of its site
    variants: float = 0.1  # share of articles with a ?print=1 variant linked
    seeds: int = 5
    seed: int = 1


SHAPES = (
    Shape("mixed-4k", pages=4000, hosts=200, seed=1),
    Shape("mixed-20k", pages=20000, hosts=600, seed=2),
    Shape("deep-8k", pages=8000, hosts=250, deep_share=0.5, portal_share=0.03,
          cross_links=1.0, home_bias=0.3, seed=3),
    Shape("portals-8k", pages=8000, hosts=400, portal_share=0.12, deep_share=0.1,
          cross_links=2.5, portal_links=30, home_bias=0.6, size_exponent=1.3, seed=4),
    Shape("flat-6k", pages=6000, hosts=300, deep_share=0.05, cross_links=3.0,
          home_bias=0.2, attach_offset=3.0, related=3.0, seed=5),
)  # fmt: skip


@dataclass
class Web:
    """Pages, hosts and links; page *i* is ``hosts[host_of[i]]`` + ``paths[i]``."""

    shape: Shape
    hosts: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # portal | deep | plain
    homes: list[int] = field(default_factory=list)  # each host's home page
    host_of: list[int] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    links: list[list[int]] = field(default_factory=list)  # out-links, in page order
    seeds: list[int] = field(default_factory=list)

    def add_page(self, host: int, path: str) -> int:
        self.host_of.append(host)
        self.paths.append(path)
        self.links.append([])
        return len(self.paths) - 1

    def url(self, page: int, port: int | None = None) -> str:
        """The page's URL (``http://host[:port]/path``)."""
        netloc = self.hosts[self.host_of[page]]
        if port is not None:
            netloc = f"{netloc}:{port}"
        return f"http://{netloc}{self.paths[page]}"

    def addresses(self) -> dict[str, str]:
        """Each host's loopback address: 127.77.x.y, y in 1..250."""
        return {
            host: f"127.77.{index // 250}.{index % 250 + 1}"
            for index, host in enumerate(self.hosts)
        }

    def in_degrees(self) -> list[int]:
        degrees = [0] * len(self.paths)
        for targets in self.links:
            for target in set(targets):
                degrees[target] += 1
        return degrees


def build(shape: Shape) -> Web:
    """A web of *shape*: sites first, then links between hosts, then the seeds."""
    return _Builder(shape).build()


class _Builder:
    """Draws one web of *shape*, every draw from one ``random.Random(shape.seed)``."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.rng = random.Random(shape.seed)
        self.web = Web(shape)

    def build(self) -> Web:
        web, rng, shape = self.web, self.rng, self.shape
        for index, size in enumerate(self._site_sizes()):
            kind = self._kind()
            tld = rng.choices([t for t, _ in TLDS], [w for _, w in TLDS])[0]
            web.hosts.append(f"www.{rng.choice(WORDS)}-{index}.{tld}")
            web.kinds.append(kind)
            self._site(index, size, kind)
        self._link_hosts()
        for page, targets in enumerate(web.links):
            web.links[page] = list(dict.fromkeys(t for t in targets if t != page))
        portals = [h for h, kind in enumerate(web.kinds) if kind == "portal"]
        others = [h for h, kind in enumerate(web.kinds) if kind != "portal"]
        chosen = rng.sample(portals, min(2, len(portals)))
        chosen += rng.sample(others, shape.seeds - len(chosen))
        web.seeds = [web.homes[h] for h in chosen]
        return web

    def _site_sizes(self) -> list[int]:
        shape = self.shape
        raw = [1.0 / (rank**shape.size_exponent) for rank in range(1, shape.hosts + 1)]
        self.rng.shuffle(raw)
        scale = shape.pages * SIZE_FILL / sum(raw)
        return [max(3, round(value * scale)) for value in raw]

    def _kind(self) -> str:
        draw, shape = self.rng.random(), self.shape
        if draw < shape.portal_share:
            return "portal"
        return "deep" if draw < shape.portal_share + shape.deep_share else "plain"

    def _site(self, host: int, size: int, kind: str) -> None:
        """Home, sections (index pages), subsections, articles in "next" chains,
        each container listing its first articles and paginated (``?page=N``)."""
        web, rng = self.web, self.rng
        home = web.add_page(host, "/")
        web.homes.append(home)
        sections = max(1, min(12, round(size ** (0.6 if kind == "portal" else 0.4))))
        containers: list[int] = []
        section_pages = []
        for index in range(sections):
            name = f"{rng.choice(WORDS)}{index}"
            section = web.add_page(host, f"/{name}/")
            section_pages.append(section)
            web.links[home].append(section)
            web.links[section].append(home)
            containers.append(section)
            if kind != "portal" and size > 40 and rng.random() < 0.6:
                for sub in range(rng.randint(1, 4)):
                    path = f"/{name}/{rng.choice(WORDS)}{sub}/index.html"
                    page = web.add_page(host, path)
                    web.links[section].append(page)
                    web.links[page] += [section, home]
                    containers.append(page)
        for page in section_pages:  # the site's menu on every section page
            web.links[page] += section_pages[:6]
        articles = max(0, size - len(web.paths) + home)
        shares = [rng.random() + 0.2 for _ in containers]
        total = sum(shares)
        for container, share in zip(containers, shares, strict=True):
            self._chain(container, round(articles * share / total), kind)

    def _chain(self, container: int, count: int, kind: str) -> None:
        """*count* articles under *container*: a "next" chain, listed a few at a
        time on the container and its ``?page=N`` pages; some related links."""
        if count == 0:
            return
        web, rng = self.web, self.rng
        host = web.host_of[container]
        home = web.homes[host]
        base = web.paths[container].removesuffix("index.html")
        per_page = 2 if kind == "deep" else 8 if kind == "plain" else 15
        listing = container
        previous: int | None = None
        site_articles: list[int] = []
        for index in range(count):
            if index and index % per_page == 0:
                page = web.add_page(host, f"{base}?page={index // per_page + 1}")
                web.links[listing].append(page)
                web.links[page] += [container, home]
                listing = page
            slug = f"{rng.choice(SLUGS)}-{index}"
            article = web.add_page(host, f"{base}{slug}.html")
            web.links[listing].append(article)
            web.links[article] += [home, container]
            if previous is not None:
                web.links[previous].append(article)
                web.links[article].append(previous)
            if rng.random() < self.shape.variants:
                variant = web.add_page(host, f"{base}{slug}.html?print=1")
                web.links[article].append(variant)
                web.links[variant].append(article)
            previous = article
            site_articles.append(article)
        for article in site_articles:
            for _ in range(_poisson(self.shape.related, rng)):
                web.links[article].append(rng.choice(site_articles))

    def _link_hosts(self) -> None:
        """Links between hosts by preferential attachment, pages in random order.

        A pool holds each host (or page) once per unit of weight; drawing
        uniformly from it and adding the target again after each link is
        attachment with weight in-links + offset (the offset in whole copies).
        """
        web, shape, rng = self.web, self.shape, self.rng
        copies = max(1, round(shape.attach_offset))
        self.host_pool = [h for h in range(len(web.hosts)) for _ in range(copies)]
        self.page_pool = [p for p in range(len(web.paths)) for _ in range(copies)]
        order = list(range(len(web.paths)))
        rng.shuffle(order)
        for page in order:
            host = web.host_of[page]
            kind = web.kinds[host]
            mean = shape.portal_links if kind == "portal" else shape.cross_links
            for _ in range(_poisson(mean, rng)):
                target = self._draw_target(host)
                if target is None:
                    continue
                web.links[page].append(target)
                self.host_pool.append(web.host_of[target])
                self.page_pool.append(target)

    def _draw_target(self, host: int) -> int | None:
        """A page of another host: its home (host by attachment) or any page."""
        web, rng = self.web, self.rng
        for _ in range(8):
            if rng.random() < self.shape.home_bias:
                target = web.homes[rng.choice(self.host_pool)]
            else:
                target = rng.choice(self.page_pool)
            if web.host_of[target] != host:
                return target
        return None


def _poisson(mean: float, rng: random.Random) -> int:
    """A Poisson draw by counting exponential gaps (means here are small)."""
    count, total = 0, rng.expovariate(1.0)
    while total < mean:
        count += 1
        total += rng.expovariate(1.0)
    return count


def pagerank(
    links: Sequence[Sequence[int]],
    damping: float = DAMPING,
    tolerance: float = 1e-10,
    max_iterations: int = 200,
) -> list[float]:
    """PageRank of every page (sums to 1): power iteration until the L1 change is
    below *tolerance*; a page without out-links spreads its mass over all pages."""
    n = len(links)
    rank = [1.0 / n] * n
    for _ in range(max_iterations):
        dangling = sum(rank[p] for p in range(n) if not links[p])
        base = (1.0 - damping) / n + damping * dangling / n
        new = [base] * n
        for page, targets in enumerate(links):
            if targets:
                share = damping * rank[page] / len(targets)
                for target in targets:
                    new[target] += share
        change = sum(abs(a - b) for a, b in zip(new, rank, strict=True))
        rank = new
        if change < tolerance:
            break
    return rank
