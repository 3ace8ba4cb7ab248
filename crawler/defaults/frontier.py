"""Defaults of the frontier's settings (``FRONTIER_*``, read in crawler/frontier/):
shards, the breadth-first order, leases, nodes, the seen-URL filter, persistence."""

# Namespace of every Redis key of this crawl; empty means the spider's name.
FRONTIER_KEY_PREFIX = ""
# Number of shards hosts are spread over; must be a power of two.
FRONTIER_SHARDS = 64
# What a shard is chosen by: "host" (the URL's host) or "domain" (registered domain).
FRONTIER_SHARD_BY = "host"
# Depths beyond the shallowest unfinished one that may be fetched. -1 (no barrier): the
# shallowest ready request always goes first, and a host waiting out its politeness
# delay never holds the others back (needed to reach H/D pages/s, bench/RESULTS.md);
# a page first found through a longer path keeps that depth. 0 is strict BFS: exact
# depths and BFS order within every host, but hosts idle at the end of each depth.
FRONTIER_BFS_LOOKAHEAD = -1
# Order of requests: "bfs" (depth, then Request.priority, higher first, then FIFO),
# "priority" (Scrapy's order: priority, then depth, then FIFO) or "importance" (the
# most important URL first, I(P) = IMPORTANCE_ALPHA * IB(P) + IMPORTANCE_BETA * IL(P):
# in-links and URL features, docs/ordering.md). The last two need
# FRONTIER_BFS_LOOKAHEAD=-1. Priorities beyond -512..511 are clamped to the bounds.
FRONTIER_ORDER = "bfs"
# Weight of IB(P), the backlink importance: the credits of P's in-links so far.
IMPORTANCE_ALPHA = 1.0
# Weight of IL(P), the location importance: the score of P's URL (0 to 1); chosen
# on simulated webs crawled as the crawler does: a URL's look is worth about five
# in-links.
IMPORTANCE_BETA = 5.0
# The URL scorer giving IL(P) (an import path to a callable taking a URL).
IMPORTANCE_URL_SCORER = "crawler.policy.urlimportance.url_importance"
# What one in-link passes on: "weighted" (a floor plus the linking page's backlink
# importance split over its links, decaying with its depth, a link from another
# host worth half, and a term per host), "count" (1 an in-link: backlink count) or
# "opic" (the page's backlink importance split evenly: OPIC's cash).
IMPORTANCE_BACKLINKS = "weighted"
# With hosts running ahead (FRONTIER_BFS_LOOKAHEAD != 0), a URL found again by a
# shorter path is queued again at the shorter depth (its deeper copy is dropped; if
# it was fetched already, its links are followed again from the page store, without
# a second request to its host): every page within DEPTH_LIMIT is fetched at its link
# distance. Without a page store, pages already fetched keep their depth. Costs about
# 40 bytes in Redis per URL queued more than one depth past the shallowest
# unfinished one, until the crawl reaches it.
FRONTIER_DEPTH_REPAIR = True
# Requests of one host in flight at once (1 is the polite norm).
FRONTIER_HOST_CONCURRENCY = 1
# Seconds before a handed-out request that was never acknowledged goes back to its
# queue; a live node renews its leases, so this is how long a dead node's work waits.
FRONTIER_LEASE_TIMEOUT = 60.0
# Seconds a node stays registered (and keeps its shards) without a heartbeat; a dead
# node's shards go to the others after this. Heartbeats come every
# FRONTIER_MAINTENANCE_INTERVAL.
FRONTIER_NODE_TTL = 30.0
# How often (seconds) this node beats its heartbeat, renews its shards and leases,
# returns expired leases to their queues and logs progress (at most once a round).
FRONTIER_MAINTENANCE_INTERVAL = 5.0
# This node's id in the crawl (scrapyd, several machines: one name per node); empty:
# <host>-<hash of the working directory>-<n>, the same after a restart in place.
FRONTIER_NODE_NAME = ""
# Which node owns which shard (docs/operations.md#nodes-of-different-sizes):
# "rendezvous" (every node alike), "round-robin" (shard i to the i-th node),
# "weighted" (shares in proportion to each node's weight), "least-load" and "pick-2"
# (weighted, and a node with free capacity takes shards with hosts waiting from the
# most loaded node, or the more loaded of two picked at random). Chosen on
# bench/dispatch.py's figures (least-load 1.11 x the ideal, pick-2 1.09 x: equal
# within run-to-run variation; weighted 1.20 x, rendezvous 3.62 x).
FRONTIER_DISPATCH = "least-load"
# This node's weight among the nodes (any positive number, set on every node or on
# none); 0: its capacity measured while it is saturated (pages/s). Run-time
# setting: `scrapy frontier set --node NODE FRONTIER_NODE_WEIGHT=4`.
FRONTIER_NODE_WEIGHT = 0.0
# Seconds a shard that moved to free capacity stays before it may move again, so
# shards do not ping-pong between nodes.
FRONTIER_DISPATCH_HOLD = 30.0
# Seconds between two progress log lines (done, failed, queued, held, in flight,
# pages/min, elapsed, time to drain the queue, why this node is idle); like Scrapy's
# LOGSTATS_INTERVAL, which the frontier turns off. Logged at the heartbeat that passes
# it, so never more often than FRONTIER_MAINTENANCE_INTERVAL.
FRONTIER_LOG_INTERVAL = 10.0
# Seen-URL filter: "bloom" (about 4 bytes a URL) or "exact" (a set of fingerprints).
FRONTIER_DEDUP = "bloom"
# URLs the Bloom filters of all shards are sized for; past it, filters are added up to
# about 1000 times it (crawler/frontier/dedup.py), then the error rate rises.
FRONTIER_DEDUP_CAPACITY = 10_000_000
# False-positive rate of the Bloom filter (a new URL wrongly taken as seen).
FRONTIER_DEDUP_ERROR_RATE = 1e-6
# Megabytes of the local seen cache: links this process sent to the frontier, so a
# repeated link costs no Redis round trip (the bfs spider's, no request at all); 9
# bytes a link, so 32 MB remember about 3.7M (crawler/context/seencache.py). 0: off.
FRONTIER_LOCAL_SEEN_MB = 32
# Requests buffered in this process before they are pushed to Redis in one round trip.
FRONTIER_PUSH_BATCH = 64
# Spill queues to disk (crawler/frontier/spill/): each host's queue of a level keeps
# at most FRONTIER_SPILL_HEAD entries in Redis, the rest waits in a table of
# FRONTIER_SPILL_DATABASE_URL and comes back, in order, as the head drains; Redis then
# holds hosts x head entries, not every queued URL. A crawl keeps the choice it
# started with (docs/scale.md).
FRONTIER_SPILL = False
# Entries a host's queue of one level keeps in Redis when FRONTIER_SPILL is on; the
# next ones come back when it falls below half of it.
FRONTIER_SPILL_HEAD = 100
# The database spilled entries wait in (sqlite:///path or postgresql://...); empty:
# RECORDS_DATABASE_URL. Nodes of a cluster must share it: use PostgreSQL.
FRONTIER_SPILL_DATABASE_URL = ""
# Seconds between two rounds of the spill worker (write spilled entries to the
# database, bring back the next entries of queues that ran low).
FRONTIER_SPILL_INTERVAL = 1.0
# Keep the frontier in Redis when the crawl stops, so the next run resumes it.
FRONTIER_PERSIST = True
# Clear this crawl's frontier (queues, seen filter, leases) at start.
FRONTIER_RESET = False
# Close the spider when every queue is empty and nothing is in flight; False waits
# for new seeds pushed to the seeds list in Redis.
FRONTIER_CLOSE_WHEN_DRAINED = True
# Crawl strategy per site, by domain suffix (the longest matching one wins; "*": every
# other host): "bfs", "dfs" (that host's deepest queued pages first) or "auto" (from
# the host's own crawl history: bfs for portals whose links mostly leave the site,
# dfs for deep specialised sites), each with an optional depth limit in place of
# DEPTH_LIMIT: {"docs.example.org": "dfs:30", ".edu": "auto", "*": "bfs"}, or for -s
# "docs.example.org=dfs:30,.edu=auto". Empty: every host bfs under DEPTH_LIMIT.
FRONTIER_SITE_STRATEGY: dict[str, object] = {}

# Data directory of the private Redis server started when REDIS_URL is empty
# (crawler/crawlstate/embedded.py); a later run in the same directory resumes from it.
FRONTIER_EMBEDDED_REDIS_DIR = ".crawl/redis"
# Where a running crawl registers itself (<prefix>.<pid>.json: its Redis URL, pid,
# start; mode 0600, removed when it closes), so `scrapy frontier` and `scrapy pages`
# run in this directory find it (crawler/crawlstate/running.py); empty: no register.
FRONTIER_RUNNING_DIR = ".crawl/running"
