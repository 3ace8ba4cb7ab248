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

from crawler.policy.importance import SEED_CREDIT, band_floor, band_of, link_credit
from crawler.policy.urlimportance import url_importance

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
    def host_value(self, host: int, key: float) -> float: ...
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

    def host_value(self, host: int, key: float) -> float:
        """How *host*, whose best URL has *key*, ranks against other hosts."""
        return key + self.bonus(host)

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
    floor_exponent: float = 0.0  # the floor too divided by outdeg(Q) ** this
    source: str = "I"  # I | IB: which of Q's values its links pass on
    same_host: float = 1.0
    same_host_floor: float = 1.0  # the floor's share in a same-host link's credit
    other_host: float = 1.0
    depth_decay: float = 1.0  # credit times this ** depth(Q)
    host_term: float = 0.0  # share of credits from other hosts added per host
    log_scale: bool = False  # I = alpha * ln(1 + IB) + beta * IL
    host_log: bool = False  # host term = host_term * ln(1 + credits from others)
    il_weights: dict[str, float] = field(default_factory=lambda: dict(IL_WEIGHTS))
    il_scorer: str = "bench"  # bench (url_score with il_weights) | crawler (main's)
    bands: bool = False  # rank by the frontier's bands (9% steps), FIFO within

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
        self.depth = [0] * pages
        self.popped_at = [0.0] * pages
        self.hosts = [0.0] * len(web.hosts)
        self.seeds = set(web.seeds)

    def discover(self, page: int, depth: int, seq: int) -> None:
        rule = self.rule
        self.depth[page] = depth
        if rule.beta:
            url = self.web.url(page)
            if rule.il_scorer == "crawler":
                self.il[page] = url_importance(url)
            else:
                self.il[page] = url_score(url, rule.il_weights)
        if page in self.seeds:
            self.ib[page] = rule.seed_importance

    def key(self, page: int) -> float:
        rule = self.rule
        ib = math.log1p(self.ib[page]) if rule.log_scale else self.ib[page]
        importance = rule.alpha * ib + rule.beta * self.il[page]
        return -band_of(importance) if rule.bands else importance

    def bonus(self, host: int) -> float:
        if self.rule.host_log:
            return self.rule.host_term * math.log1p(self.hosts[host])
        return self.hosts[host]

    def host_value(self, host: int, key: float) -> float:
        return key + self.bonus(host)

    def popped(self, page: int) -> None:
        self.popped_at[page] = self.key(page)

    def fetched(
        self, page: int, targets: Sequence[int], status: bytearray
    ) -> tuple[Iterable[int], Iterable[int]]:
        if not targets:
            return (), ()
        rule = self.rule
        source = self.popped_at[page] if rule.source == "I" else self.ib[page]
        out = len(targets)
        floor = rule.floor / out**rule.floor_exponent
        passed = rule.damping * source / out**rule.out_exponent
        decay = rule.depth_decay ** self.depth[page]
        floor, passed = floor * decay, passed * decay
        base = floor + passed
        same = (rule.same_host_floor * floor + passed) * rule.same_host
        host_of = self.web.host_of
        host = host_of[page]
        changed, hosts = [], set()
        for target in targets:
            other = host_of[target] != host
            credit = base * rule.other_host if other else same
            if other and rule.host_term:
                share = 1.0 if rule.host_log else rule.host_term
                self.hosts[host_of[target]] += share * credit
                hosts.add(host_of[target])
            if status[target] == QUEUED:
                self.ib[target] += credit
                changed.append(target)
        return changed, hosts


class Frontier(Importance):
    """The frontier's own rule on main (``crawler.policy.importance``): each link's
    ``link_credit`` from IB(Q) as popped and Q's depth, IL by ``url_importance``,
    I = alpha * IB + beta * IL; a host ranks its URLs by band, then depth, then
    first queued; hosts rank by the band of their best URL's band floor plus
    their host term, then depth (``scripthelpers.host_score_rank``)."""

    LEVEL = 1000  # key = -(band * LEVEL + depth)

    def __init__(self, name: str, mode: str, alpha: float, beta: float) -> None:
        rule = Rule(name, alpha=alpha, beta=beta, il_scorer="crawler", bands=True)
        super().__init__(rule)
        self.mode = mode

    def discover(self, page: int, depth: int, seq: int) -> None:
        super().discover(page, depth, seq)
        if page in self.seeds:
            self.ib[page] = SEED_CREDIT

    def importance(self, page: int) -> float:
        return self.rule.alpha * self.ib[page] + self.rule.beta * self.il[page]

    def key(self, page: int) -> float:
        return -float(band_of(self.importance(page)) * self.LEVEL + self.depth[page])

    def host_value(self, host: int, key: float) -> float:
        term = self.hosts[host]
        if not term > 0:
            return key
        band, depth = divmod(int(-key), self.LEVEL)
        return -float(band_of(band_floor(band) + term) * self.LEVEL + depth)

    def popped(self, page: int) -> None:
        self.popped_at[page] = self.ib[page]

    def fetched(
        self, page: int, targets: Sequence[int], status: bytearray
    ) -> tuple[Iterable[int], Iterable[int]]:
        host_of = self.web.host_of
        host = host_of[page]
        changed, hosts = [], set()
        for target in targets:
            external = host_of[target] != host
            credit = link_credit(
                self.mode,
                self.popped_at[page],
                self.depth[page],
                len(targets),
                external,
            )
            if credit.host > 0:
                self.hosts[host_of[target]] += credit.host
                hosts.add(host_of[target])
            if status[target] == QUEUED:
                self.ib[target] += credit.url
                changed.append(target)
        return changed, hosts


FRONTIER_RULES = {
    "frontier-weighted": ("weighted", 1.0, 1.5),
    "frontier-count": ("count", 1.0, 1.5),
    "frontier-opic": ("opic", 1.0, 1.5),
}


# IL's weights of the chosen rule: index pages and few slashes count most.
WEIGHTED_IL = {"tld": 0.5, "home": 2.0, "index": 4.0, "depth": 3.0, "query": 1.0,
               "length": 0.5}  # fmt: skip
# The rule the simulation chose (bench/RESULTS.md, "Importance order"):
# credit(Q -> P) = 0.7 ** depth(Q) * (1 + 0.85 * IB(Q) / outdeg(Q)), halved when P
# is on another host; I(P) = ln(1 + IB(P)) + 1.5 * IL(P); hosts compared with
# 0.2 * the credits their pages got from other hosts added.
WEIGHTED = Rule(
    "weighted",
    floor=1.0,
    damping=0.85,
    source="IB",
    other_host=0.5,
    depth_decay=0.7,
    host_term=0.2,
    log_scale=True,
    beta=1.5,
    il_weights=WEIGHTED_IL,
)
BASE_RULES = (
    Rule("count", floor=1.0, damping=0.0),
    Rule("opic", floor=0.0, damping=1.0, source="IB"),
    WEIGHTED,
    replace(WEIGHTED, name="weighted-no-il", beta=0.0),
    replace(WEIGHTED, name="weighted-no-host", host_term=0.0),
    replace(WEIGHTED, name="weighted-no-decay", depth_decay=1.0),
    replace(WEIGHTED, name="weighted-same-cross", other_host=1.0),
    replace(WEIGHTED, name="weighted-linear", log_scale=False),
    replace(WEIGHTED, name="weighted-linear-bands", log_scale=False, bands=True),
    # For a crawler that hands out one request per page it handles (CPU-bound,
    # many hosts ready: bench.importance's regime), IL must weigh more; count and
    # OPIC with the same IL, for a fair comparison.
    replace(WEIGHTED, name="weighted-beta5", log_scale=False, beta=5.0),
    Rule("count-beta5", beta=5.0, il_weights=WEIGHTED_IL),
    Rule(
        "opic-beta5",
        floor=0.0,
        damping=1.0,
        source="IB",
        beta=5.0,
        il_weights=WEIGHTED_IL,
    ),
    replace(WEIGHTED, name="weighted-crawler-il", il_scorer="crawler"),
    replace(
        WEIGHTED,
        name="weighted-in-bands",
        log_scale=False,
        bands=True,
        il_scorer="crawler",
    ),
)
RULES = {rule.name: rule for rule in BASE_RULES}
DEFAULT = ("bfs", "count", "opic", "weighted", "omni")
ABLATIONS = tuple(rule.name for rule in BASE_RULES[3:])


def named(name: str) -> Order:
    """The order called *name*: bfs, omni, or a rule of ``RULES``."""
    if name == "bfs":
        return Bfs()
    if name == "omni":
        return Omniscient()
    if name in FRONTIER_RULES:
        return Frontier(name, *FRONTIER_RULES[name])
    return RULES[name].order()


def variant(name: str, base: str = "count", **changes: object) -> Rule:
    """A rule like *base* with *changes*, registered as *name*."""
    rule = replace(RULES[base], name=name, **changes)  # type: ignore[arg-type]
    RULES[name] = rule
    return rule
