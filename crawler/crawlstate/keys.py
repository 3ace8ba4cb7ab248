"""Every Redis key name of a crawl, built here and nowhere else.

Per-shard keys carry the shard as a Redis Cluster hash tag (``crawl:{s07}:ready``), so
that a Lua script touching one shard's keys runs on one Cluster node.
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Formatter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# 4: queues, leases, held and failed entries keep a queue class (level and
# priority band, crawler.policy.order) where 3 kept a level.
SCHEMA_VERSION = "4"


@dataclass(frozen=True, slots=True)
class KeyShape:
    """The shape of a per-shard key built from values (a host, a queue class...),
    after the shard's tag: ``q:{host}:{level}``.

    The Lua scripts build these keys too; ``crawler.frontier.store.scriptkeys``
    renders each shape into a Lua function, so a shape is spelled here and only here.
    """

    name: str
    template: str

    @property
    def fields(self) -> tuple[str, ...]:
        """The names of the values the key is built from, in order."""
        return tuple(f for _, f, _, _ in Formatter().parse(self.template) if f)

    def pieces(self) -> list[tuple[str, str | None]]:
        """The template as (literal text, field name or None) pairs, in order."""
        return [(text, field) for text, field, _, _ in Formatter().parse(self.template)]

    def build(self, tag: str, **values: object) -> str:
        """The key of the shard whose tag is *tag*, for *values* (one per field)."""
        return tag + self.template.format(**values)


# The per-shard keys scripts build from values, by the Keys member that builds them.
QUEUE = KeyShape("queue", "q:{host}:{level}")
LEVELS = KeyShape("levels", "lv:{host}")
PROVISIONAL = KeyShape("provisional", "prov:{depth}")
PROVISIONAL_SEQUENCES = KeyShape("provisional_sequences", "provseq:{depth}")
DAMAGED = KeyShape("damaged", "damaged")
BLOOM = KeyShape("bloom", "seen:{index}")
IMPORTANCE = KeyShape("importance", "im:{host}")
ENTRIES = KeyShape("entries", "ie:{host}")
STRATEGIES = KeyShape("strategies", "strategies")
HOST_TERMS = KeyShape("host_terms", "host-terms")
BUDGETS = KeyShape("budgets", "budgets")
SPILL = KeyShape("spill", "spill")
SPILL_OUT = KeyShape("spill_out", "spill-out")
SPILL_WANTED = KeyShape("spill_wanted", "spill-wanted")
KEY_SHAPES = (
    QUEUE,
    LEVELS,
    PROVISIONAL,
    PROVISIONAL_SEQUENCES,
    DAMAGED,
    BLOOM,
    IMPORTANCE,
    ENTRIES,
    STRATEGIES,
    HOST_TERMS,
    BUDGETS,
    SPILL,
    SPILL_OUT,
    SPILL_WANTED,
)


@dataclass(frozen=True, slots=True)
class CrawlKeys:
    """Keys shared by every shard of the crawl named *prefix*."""

    prefix: str

    @classmethod
    def of(cls, settings: BaseSettings, spider_name: str) -> CrawlKeys:
        """The keys of the crawl a spider runs: ``FRONTIER_KEY_PREFIX`` or its name."""
        return cls(settings.get("FRONTIER_KEY_PREFIX") or spider_name)

    @property
    def meta(self) -> str:
        """HASH: ``schema_version`` and crawl-wide facts."""
        return f"{self.prefix}:meta"

    @property
    def identity(self) -> str:
        """STRING, JSON: what the crawl is (spider, scope, seeds, started at),
        written when it first opens (``crawler.crawlstate.identity``)."""
        return f"{self.prefix}:identity"

    @property
    def seeds(self) -> str:
        """LIST of seed URLs any client may push for a running crawl."""
        return f"{self.prefix}:seeds"

    def robots(self, origin: str) -> str:
        """STRING: the JSON record of *origin*'s robots.txt (``http://host:port``),
        shared by every node until it expires."""
        return f"{self.prefix}:robots:{origin}"

    def robots_lock(self, origin: str) -> str:
        """STRING with a TTL: the node fetching *origin*'s robots.txt right now."""
        return f"{self.prefix}:robots-lock:{origin}"

    def dns(self, name: str) -> str:
        """STRING, JSON with a TTL: what DNS answered for *name* (addresses, or
        none) and until when, shared by every node (``crawler.dns.cache``)."""
        return f"{self.prefix}:dns:{name}"

    def dns_lock(self, name: str) -> str:
        """STRING with a TTL: the node asking DNS about *name* right now."""
        return f"{self.prefix}:dns-lock:{name}"

    def soft_404(self, origin: str) -> str:
        """STRING with a TTL: the signature of *origin*'s answer to a page that
        cannot exist, or ``-`` if it answered honestly
        (``crawler.middlewares.soft404``)."""
        return f"{self.prefix}:soft404:{origin}"

    def near_duplicates(self, host: str) -> str:
        """HASH with a TTL: band (``b<i>:<bits>``) -> the 14-byte records (SimHash,
        URL key) of *host*'s latest pages whose SimHash has that band, oldest
        first (``crawler.spiders.neardups``)."""
        return f"{self.prefix}:nd-bands:{host}"

    def near_duplicate_urls(self, host: str) -> str:
        """HASH with a TTL: url key -> ``<text hash> <links signature>`` of *host*'s
        pages in the near-duplicate index (``crawler.spiders.neardups``); no URL."""
        return f"{self.prefix}:nd-urls:{host}"

    def url_rules(self, host: str) -> str:
        """HASH with a TTL: what *host*'s near-duplicates taught about its URLs
        (``crawler.crawlstate.urlrules``): ``r:<rule>`` -> its evidence so far, -1 once
        contradicted; ``e:<rule> <where>`` -> 1 for each piece of evidence."""
        return f"{self.prefix}:url-rules:{host}"

    def server_gate(self, server: str) -> str:
        """STRING with a TTL: ``<until ms> <holder>`` of a server (POLITENESS_KEY =
        ip or domain): the lease fetching from it (until then at most), or ``-``
        once it is done, until the server's delay has passed
        (``crawler.frontier.servergates``)."""
        return f"{self.prefix}:server:{server}"

    @property
    def nodes(self) -> str:
        """HASH node id -> JSON of the node (host, pid, start, version, last
        heartbeat, shards owned, pages fetched); entries of dead nodes are pruned."""
        return f"{self.prefix}:nodes"

    def heartbeat(self, node_id: str) -> str:
        """STRING with a TTL of FRONTIER_NODE_TTL: exists while the node is alive."""
        return f"{self.prefix}:node:{node_id}"

    @property
    def control(self) -> str:
        """HASH of run-time controls: ``paused`` ("1" pauses every node) and
        ``set:<SETTING>`` (a new value nodes apply within one heartbeat)."""
        return f"{self.prefix}:control"

    @property
    def health(self) -> str:
        """HASH host -> JSON timeout record (slow mark, escalations, pause)."""
        return f"{self.prefix}:health"

    def traffic(self, host: str) -> str:
        """HASH of *host*'s traffic counters (``scrapy frontier hosts``)."""
        return f"{self.prefix}:traffic:{host}"

    def traffic_rank(self, metric: str) -> str:
        """ZSET host -> *metric* (``requests``, ``bytes``, ``errors``, ``failures``), for top-N
        tables."""
        return f"{self.prefix}:traffic-by:{metric}"

    @property
    def traffic_active(self) -> str:
        """ZSET host -> when its traffic counters were last written (epoch seconds):
        hosts idle past ``TRAFFIC_IDLE_TTL`` are taken out of the rankings."""
        return f"{self.prefix}:traffic-active"

    def site(self, host: str) -> str:
        """HASH of what this crawl's pages of *host* showed (the site strategy's
        evidence, ``crawler.crawlstate.sitecounters``): ``pages``, ``links``,
        ``leaving`` (links to another site), ``d<depth>`` (pages at that link
        depth), and the strategy in force with why (``strategy``)."""
        return f"{self.prefix}:site:{host}"

    def pace(self, node_id: str) -> str:
        """HASH of *node_id*'s pages done a minute over the last hour, a ring of 60
        slots: ``m<slot>`` -> the minute (``time // 60``), ``p<slot>`` -> pages done
        in it; expires an hour after the node's last write."""
        return f"{self.prefix}:pace:{node_id}"

    @property
    def pace_nodes(self) -> str:
        """ZSET node id -> time (s) of its last ``pace`` write, for the dashboard's
        pages/s over the last hour (entries older than an hour are dropped)."""
        return f"{self.prefix}:pace-nodes"

    def render(self, host: str) -> str:
        """HASH of what RENDER_MODE=auto learnt of *host* (``host:port``): sample
        claims, outcomes and decisions of the host and its URL patterns
        (``crawler.render.levels``). The host is the key's hash tag, shared with
        ``render_parked``: a script reads both."""
        return f"{self.prefix}:render:{{{host}}}"

    def render_parked(self, host: str) -> str:
        """HASH ``<pattern> <url>`` -> queue entry: pages of *host* fetched
        statically while undecided, rendered if the decision says so."""
        return f"{self.prefix}:render-parked:{{{host}}}"

    @property
    def analysis_tasks(self) -> str:
        """STREAM of analysis tasks (one per stored page), read by ``scrapy analyze``
        in the consumer group ``crawler.analysis.tasks.GROUP``."""
        return f"{self.prefix}:analysis:tasks"

    @property
    def analysis_dead(self) -> str:
        """STREAM of analysis tasks that failed for good, each with its last error."""
        return f"{self.prefix}:analysis:dead"

    @property
    def pattern(self) -> str:
        """SCAN pattern matching every key of the crawl (used by reset only)."""
        return f"{self.prefix}:*"

    def shard(self, shard: int) -> Keys:
        return Keys(self.prefix, shard)


@dataclass(frozen=True, slots=True)
class Keys:
    """The keys of one shard of the crawl named *prefix*."""

    prefix: str
    shard: int

    @property
    def tag(self) -> str:
        """The hash-tagged prefix; scripts build per-host keys from it and only it."""
        return f"{self.prefix}:{{s{self.shard:02d}}}:"

    @property
    def ready(self) -> str:
        """ZSET host -> BFS score of its head request, for hosts that may go now."""
        return self.tag + "ready"

    @property
    def owner(self) -> str:
        """STRING with a TTL: the id of the node that owns the shard (and alone may
        pop from it); only the owner renews it."""
        return self.tag + "owner"

    @property
    def loan(self) -> str:
        """STRING ``<node id>|<since>``: the node this shard moved to when that node
        had free capacity and the shard's home had hosts waiting
        (``crawler.policy.dispatch``); it holds while that node lives."""
        return self.tag + "loan"

    @property
    def backoffs(self) -> str:
        """HASH host -> what the host taught by its answers (429, 503, timeouts): its
        learnt delay, why and since when (``crawler.policy.backoff``)."""
        return self.tag + "backoffs"

    @property
    def waiting(self) -> str:
        """ZSET host -> time (ms) its politeness delay ends, for hosts with requests."""
        return self.tag + "waiting"

    @property
    def ready_at(self) -> str:
        """HASH host -> time (ms) before which the host must not be fetched again."""
        return self.tag + "ready_at"

    @property
    def delays(self) -> str:
        """HASH host -> the host's current delay (ms), for hosts fetched in parallel."""
        return self.tag + "delays"

    @property
    def inflight(self) -> str:
        """HASH host -> requests of the host handed out and not yet acknowledged."""
        return self.tag + "inflight"

    @property
    def leases(self) -> str:
        """ZSET lease id -> expiry time (ms)."""
        return self.tag + "leases"

    @property
    def leased(self) -> str:
        """HASH lease id -> the leased queue entry, to put back if the lease expires."""
        return self.tag + "leased"

    @property
    def sequence(self) -> str:
        """STRING counter: FIFO order of queue entries and lease ids."""
        return self.tag + "seq"

    @property
    def counters(self) -> str:
        """HASH of cluster-wide counters of the shard (``queued``, ``enqueued``...)."""
        return self.tag + "counters"

    @property
    def held(self) -> str:
        """ZSET held entry -> time (ms) it may be tried again: requests that failed
        for a reason that may pass (retry-later); not in ``outstanding``, so a held
        request never holds the BFS barrier back."""
        return self.tag + "held"

    @property
    def failed(self) -> str:
        """HASH fingerprint (hex) -> the entry of a request that failed for good, with
        its fate: what ``scrapy frontier retry --failed`` and seeds revive."""
        return self.tag + "failed"

    @property
    def superseded(self) -> str:
        """SET of queue entry sequence numbers to drop when popped: a shallower copy
        of the same request was queued since (depth repair)."""
        return self.tag + "superseded"

    @property
    def reparse(self) -> str:
        """SET of queue entry sequence numbers of pages fetched at a depth a shorter
        path has since beaten: their links are followed again (depth repair)."""
        return self.tag + "reparse"

    def provisional_sequences(self, depth: int) -> str:
        """HASH sequence number -> depth key of the requests in ``provisional``."""
        return PROVISIONAL_SEQUENCES.build(self.tag, depth=depth)

    def provisional(self, depth: int) -> str:
        """HASH depth key -> sequence number (or ``f`` once fetched) of requests
        queued at *depth* that a shorter path may still reach."""
        return PROVISIONAL.build(self.tag, depth=depth)

    @property
    def outstanding(self) -> str:
        """HASH level -> requests of that level queued or leased (the BFS barrier)."""
        return self.tag + "outstanding"

    @property
    def seen(self) -> str:
        """SET of fingerprints (exact dedup) or HASH of Bloom filter layout."""
        return self.tag + "seen"

    @property
    def damaged(self) -> str:
        """LIST of the last queue entries and lease payloads the crawler did not
        write, set aside by the scripts, never decoded."""
        return DAMAGED.build(self.tag)

    def queue(self, host: str, level: int) -> str:
        """LIST of one host's requests of one queue class, *level* (a BFS level and
        priority band, crawler.policy.order), oldest first."""
        return QUEUE.build(self.tag, host=host, level=level)

    def levels(self, host: str) -> str:
        """ZSET of the queue classes that have requests queued for *host*, scored
        by their rank in FRONTIER_ORDER."""
        return LEVELS.build(self.tag, host=host)

    def importance(self, host: str) -> str:
        """HASH URL key -> ``<seq> <class> <importance> <backlinks> <in-links>`` of
        each URL of *host* queued in ``importance`` order: where it is queued (its
        list holds ``<seq>|<URL key>``) and what its in-links gave it so far (the URL
        key: the first 16 hex digits of the SHA-1 of its URL). Deleted field by field
        as the URLs are popped."""
        return IMPORTANCE.build(self.tag, host=host)

    def entries(self, host: str) -> str:
        """HASH URL key -> the queue entry (JSON) of each URL of *host* queued in
        ``importance`` order (apart from ``importance``, which every in-link
        rewrites)."""
        return ENTRIES.build(self.tag, host=host)

    @property
    def host_terms(self) -> str:
        """HASH host -> its host term in importance order: a share of the credits
        of links into its pages from other hosts (crawler/policy/importance.py),
        added to its best URL's importance where hosts are compared."""
        return HOST_TERMS.build(self.tag)

    @property
    def budgets(self) -> str:
        """HASH host -> new URLs of the host queued so far, counted when
        FRONTIER_HOST_MAX_PAGES is set (a host's page budget)."""
        return BUDGETS.build(self.tag)

    @property
    def spill(self) -> str:
        """HASH ``<class> <host>`` -> ``<spilled> <mark>`` for each queue that spilled
        (FRONTIER_SPILL): how many of its entries wait on disk or in ``spill_out``,
        and the sequence number of the last one brought back (entries come back in
        order, and one at or below the mark is never queued twice)."""
        return SPILL.build(self.tag)

    @property
    def spill_out(self) -> str:
        """LIST ``<class> <len(host)> <host><entry>`` of entries spilled and not yet
        written to the spill database, oldest first (``crawler.frontier.spill``)."""
        return SPILL_OUT.build(self.tag)

    @property
    def spill_wanted(self) -> str:
        """SET ``<class> <host>`` of spilled queues whose head in Redis ran low: the
        spill worker brings their next entries back."""
        return SPILL_WANTED.build(self.tag)

    @property
    def strategies(self) -> str:
        """HASH host -> ``dfs`` for the shard's hosts crawled deepest first
        (FRONTIER_SITE_STRATEGY); a host not in it is crawled breadth-first."""
        return STRATEGIES.build(self.tag)

    def bloom(self, index: int) -> str:
        """STRING bitmap of Bloom filter *index* (``seen`` and the index)."""
        return BLOOM.build(self.tag, index=index)
