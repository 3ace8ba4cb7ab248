"""The crawl orders of the importance simulation (``bench.importancesim``).

``bfs`` (lowest depth first, FIFO within a depth), ``omni`` (the highest true
PageRank among the discovered URLs), and the importance orders of the frontier's
model: I(P) = alpha * IB(P) + beta * IL(P). IB(P) adds a credit for every link a
fetched page Q yields to P while P is queued; the credit sees only what the node
knows when Q's links are queued: I(Q) as Q was popped (seeds: a fixed value),
IB(Q), Q's out-links, whether P is on Q's host. IL(P) scores P's URL alone.
An optional host term adds, to every URL of a host when hosts are compared, a
share of the credits its pages received from other hosts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from bench.simweb import Web

QUEUED = 1  # bench.importancesim's status of a queued URL


class Order(Protocol):
    name: str

    def start(self, web: Web, rank: Sequence[float]) -> None: ...
    def discover(self, page: int, depth: int, seq: int) -> None: ...
    def key(self, page: int) -> float: ...
    def bonus(self, host: int) -> float: ...
    def popped(self, page: int) -> None: ...
    def fetched(
        self, page: int, targets: Sequence[int], status: bytearray
    ) -> tuple[Iterable[int], Iterable[int]]: ...


class Bfs:
    """Lowest depth first, FIFO within a depth; a shorter path found while a URL
    waits lowers its depth (as the frontier's depth repair does)."""

    name = "bfs"

    def start(self, web: Web, rank: Sequence[float]) -> None:
        self.depth = [0] * len(web.paths)
        self.seq = [0] * len(web.paths)

    def discover(self, page: int, depth: int, seq: int) -> None:
        self.depth[page], self.seq[page] = depth, seq

    def key(self, page: int) -> float:
        return -(self.depth[page] * 1e8 + self.seq[page])

    def bonus(self, host: int) -> float:
        return 0.0

    def popped(self, page: int) -> None:
        pass

    def fetched(
        self, page: int, targets: Sequence[int], status: bytearray
    ) -> tuple[Iterable[int], Iterable[int]]:
        changed = []
        for target in targets:
            if status[target] == QUEUED and self.depth[page] + 1 < self.depth[target]:
                self.depth[target] = self.depth[page] + 1
                changed.append(target)
        return changed, ()


class Omniscient(Bfs):
    """The highest true PageRank among the URLs discovered."""

    name = "omni"

    def start(self, web: Web, rank: Sequence[float]) -> None:
        super().start(web, rank)
        self.rank = rank

    def key(self, page: int) -> float:
        return self.rank[page]

    def fetched(
        self, page: int, targets: Sequence[int], status: bytearray
    ) -> tuple[Iterable[int], Iterable[int]]:
        return (), ()


# IL's features and their default weights; the score is their weighted mean.
IL_WEIGHTS = {"tld": 1.0, "home": 3.0, "index": 2.0, "depth": 2.0, "query": 1.0,
              "length": 1.0}  # fmt: skip
TOP_TLDS = frozenset({"com", "org", "edu", "gov", "net"})


def url_features(url: str) -> dict[str, float]:
    """Each IL feature of *url* in [0, 1]: a common top-level domain, a home page,
    a directory index, few slashes, no query string, a short URL."""
    parts = urlsplit(url)
    path = parts.path or "/"
    leaf = path.rsplit("/", 1)[1]
    is_index = leaf == "" or leaf.startswith(("index.", "default."))
    host = parts.hostname or ""
    return {
        "tld": 1.0 if host.rsplit(".", 1)[-1] in TOP_TLDS else 0.5,
        "home": 1.0 if is_index and path.count("/") == 1 and not parts.query else 0.0,
        "index": 1.0 if is_index and not parts.query else 0.0,
        "depth": 1.0 / path.count("/"),
        "query": 0.0 if parts.query else 1.0,
        "length": max(0.0, 1.0 - len(url) / 120),
    }


def url_score(url: str, weights: dict[str, float] = IL_WEIGHTS) -> float:
    """IL: the weighted mean of *url*'s features, in [0, 1]."""
    features = url_features(url)
    total = sum(weights.values())
    return (
        sum(w * features[name] for name, w in weights.items()) / total if total else 0.0
    )


@dataclass(frozen=True)
class Rule:
    """One importance estimate: how a link's credit is computed and how IB, IL
    and the host term combine. credit(Q -> P) = host weight * (floor + damping *
    source(Q) / outdeg(Q) ** out_exponent), source = I(Q) or IB(Q) as popped."""

    name: str
    alpha: float = 1.0
    beta: float = 0.0
    seed_importance: float = 1.0  # IB of a seed
    floor: float = 1.0
    damping: float = 0.0
    out_exponent: float = 1.0
    source: str = "I"  # I | IB: which of Q's values its links pass on
    same_host: float = 1.0
    other_host: float = 1.0
    host_term: float = 0.0  # share of credits from other hosts added per host
    log_scale: bool = False  # I = alpha * ln(1 + IB) + beta * IL
    il_weights: dict[str, float] = field(default_factory=lambda: dict(IL_WEIGHTS))

    def order(self) -> Importance:
        return Importance(self)


class Importance:
    """An importance order of the frontier's model, driven by a ``Rule``."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.name = rule.name

    def start(self, web: Web, rank: Sequence[float]) -> None:
        pages = len(web.paths)
        self.web = web
        self.ib = [0.0] * pages
        self.il = [0.0] * pages
        self.popped_at = [0.0] * pages
        self.hosts = [0.0] * len(web.hosts)
        self.seeds = set(web.seeds)

    def discover(self, page: int, depth: int, seq: int) -> None:
        rule = self.rule
        if rule.beta:
            self.il[page] = url_score(self.web.url(page), rule.il_weights)
        if page in self.seeds:
            self.ib[page] = rule.seed_importance

    def key(self, page: int) -> float:
        rule = self.rule
        ib = math.log1p(self.ib[page]) if rule.log_scale else self.ib[page]
        return rule.alpha * ib + rule.beta * self.il[page]

    def bonus(self, host: int) -> float:
        return self.hosts[host]

    def popped(self, page: int) -> None:
        self.popped_at[page] = self.key(page)

    def fetched(
        self, page: int, targets: Sequence[int], status: bytearray
    ) -> tuple[Iterable[int], Iterable[int]]:
        if not targets:
            return (), ()
        rule = self.rule
        source = self.popped_at[page] if rule.source == "I" else self.ib[page]
        base = rule.floor + rule.damping * source / len(targets) ** rule.out_exponent
        host_of = self.web.host_of
        host = host_of[page]
        changed, hosts = [], set()
        for target in targets:
            other = host_of[target] != host
            credit = base * (rule.other_host if other else rule.same_host)
            if other and rule.host_term:
                self.hosts[host_of[target]] += rule.host_term * credit
                hosts.add(host_of[target])
            if status[target] == QUEUED:
                self.ib[target] += credit
                changed.append(target)
        return changed, hosts


BASE_RULES = (
    Rule("count", floor=1.0, damping=0.0),
    Rule("opic", floor=0.0, damping=1.0, source="IB"),
)
RULES = {rule.name: rule for rule in BASE_RULES}
DEFAULT = ("bfs", "count", "opic", "omni")


def named(name: str) -> Order:
    """The order called *name*: bfs, omni, or a rule of ``RULES``."""
    if name == "bfs":
        return Bfs()
    if name == "omni":
        return Omniscient()
    return RULES[name].order()


def variant(name: str, base: str = "count", **changes: object) -> Rule:
    """A rule like *base* with *changes*, registered as *name*."""
    rule = replace(RULES[base], name=name, **changes)  # type: ignore[arg-type]
    RULES[name] = rule
    return rule
