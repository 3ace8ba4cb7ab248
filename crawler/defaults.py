"""Every setting of ours, with its default, and the Scrapy built-ins whose default we change.

The add-on (``crawler.addon.Frontier``) installs each of these at the ``addon``
priority, so any Scrapy project that enables it gets them and a setting the project,
``-s`` or scrapyd sets wins. Each setting carries the prefix of the module that reads
it (see the README's settings table). Components (scheduler, middlewares, pipelines)
are installed by the add-on itself.
"""

from __future__ import annotations

import typing

if typing.TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# --- Scrapy built-ins we change ------------------------------------------------------

# The Web's diameter: nothing deeper is fetched. 0 means no limit.
DEPTH_LIMIT = 17
# Total requests in flight in this process.
CONCURRENT_REQUESTS = 16
# Backstop only: the frontier decides per-host concurrency (FRONTIER_HOST_CONCURRENCY).
CONCURRENT_REQUESTS_PER_DOMAIN = 8
# Polite by default: crawler.robots.middleware.RobotsMiddleware obeys robots.txt.
ROBOTSTXT_OBEY = True
# The product token robots.txt rules are matched against (never the rotated User-Agent);
# empty: the project's BOT_NAME.
ROBOTSTXT_USER_AGENT = ""
# Measured in bench/: link-heavy pages are processed faster with fewer parallel items.
CONCURRENT_ITEMS = 16
# One log line a minute with pages/min is enough; the frontier logs its own progress.
LOGSTATS_INTERVAL = 60.0
# Largest body taken, in bytes, counted after decompression (a gzip bomb stops there):
# 16 MiB, past Googlebot's 15 MB of HTML; 16 requests in flight then stay far under
# 1 GB. Raise it for sitemaps near the protocol's 50 MB.
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
# Bodies past this many bytes (after decompression too) are logged as a warning.
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
# Scrapy's check for a `return value` in generator callbacks reads the callback's
# source with ast for every response (its cache is keyed by the bound method, new
# with each request): about 0.8 CPU ms a response for a 40-line callback.
WARN_ON_GENERATOR_RETURN_VALUE = False

# --- Redis ---------------------------------------------------------------------------

# redis://[:password@]host:port/db or rediss://...; empty starts a private Redis server.
REDIS_URL = ""
# True: REDIS_URL is a Redis Cluster node; False: the server is asked (INFO cluster).
REDIS_CLUSTER = False
# scrapy-redis' way to name the server (redis://HOST:PORT); empty/None: REDIS_URL's.
REDIS_HOST = ""
# Port of REDIS_HOST (None: 6379); refused if REDIS_URL names another server.
REDIS_PORT = None
# redis-py client keyword arguments (a dict, or JSON with -s), e.g. {"password": "..."}.
REDIS_PARAMS: dict[str, object] = {}

# --- The frontier (crawler/frontier/) ------------------------------------------------

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
# Order of requests: "bfs" (depth, then Request.priority, higher first, then FIFO) or
# "priority" (Scrapy's order: priority, then depth, then FIFO; needs
# FRONTIER_BFS_LOOKAHEAD=-1). Priorities beyond -512..511 are clamped to the bounds.
FRONTIER_ORDER = "bfs"
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
# returns expired leases to their queues and logs progress.
FRONTIER_MAINTENANCE_INTERVAL = 5.0
# This node's id in the crawl (scrapyd, several machines: one name per node); empty:
# <host>-<hash of the working directory>-<n>, the same after a restart in place.
FRONTIER_NODE_NAME = ""
# Seconds between two progress log lines.
FRONTIER_LOG_INTERVAL = 60.0
# Seen-URL filter: "bloom" (about 4 bytes a URL) or "exact" (a set of fingerprints).
FRONTIER_DEDUP = "bloom"
# URLs the Bloom filters of all shards are sized for; past it, filters are added up to
# about 1000 times it (crawler/frontier/dedup.py), then the error rate rises.
FRONTIER_DEDUP_CAPACITY = 10_000_000
# False-positive rate of the Bloom filter (a new URL wrongly taken as seen).
FRONTIER_DEDUP_ERROR_RATE = 1e-6
# Fingerprints this process remembers to skip a Redis round trip for repeated links
# (and URLs the bfs spider remembers it yielded: a repeated link costs no request).
FRONTIER_LOCAL_SEEN_CACHE = 200_000
# Requests buffered in this process before they are pushed to Redis in one round trip.
FRONTIER_PUSH_BATCH = 64
# Keep the frontier in Redis when the crawl stops, so the next run resumes it.
FRONTIER_PERSIST = True
# Clear this crawl's frontier (queues, seen filter, leases) at start.
FRONTIER_RESET = False
# Close the spider when every queue is empty and nothing is in flight; False waits
# for new seeds pushed to the seeds list in Redis.
FRONTIER_CLOSE_WHEN_DRAINED = True

# Data directory of the private Redis server started when REDIS_URL is empty
# (crawler/crawlstate/embedded.py); a later run in the same directory resumes from it.
FRONTIER_EMBEDDED_REDIS_DIR = ".crawl/redis"

# --- Politeness (crawler/policy/politeness.py, applied by the frontier) --------------

# A floor under every host's delay, in seconds, counted from the end of the host's
# previous download. A DOWNLOAD_DELAY you set is moved here by the add-on (the frontier
# spaces requests itself; Scrapy's downloader then gets 0, or it would wait twice).
POLITENESS_MIN_DELAY = 0.0

# Seconds between two fetches of one host during its daytime, in its local time.
POLITENESS_DAY_DELAY = 10.0
# Seconds between two fetches of one host during its night.
POLITENESS_NIGHT_DELAY = 1.0
# The day, in the host's local time, as "HH:MM-HH:MM" (may wrap past midnight;
# 24:00 may end the day).
POLITENESS_DAY_HOURS = "08:00-22:00"
# Domain suffix (case-insensitive; an exact IP address also works) -> IANA time zone;
# the most specific suffix wins over the ccTLD table.
POLITENESS_TIMEZONES: dict[str, str] = {}
# Zone of hosts neither POLITENESS_TIMEZONES nor the ccTLD table place; empty means
# this machine's zone (TZ, /etc/localtime, /etc/timezone, else UTC).
POLITENESS_DEFAULT_TIMEZONE = ""
# Each delay is drawn from [delay, delay x (1 + jitter)], so the rhythm is not regular.
POLITENESS_JITTER = 0.5
# Domain suffix -> seconds; raises the delay of matching hosts (most specific wins).
POLITENESS_OVERRIDES: dict[str, float] = {}
# Most pages of one host per hour (spread evenly over the hour); empty means no cap.
POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR = None

# --- robots.txt (crawler/robots/middleware.py) ---------------------------------------

# Seconds a fetched robots.txt is shared by every node before it is fetched again.
ROBOTS_CACHE_TTL = 86400
# Seconds one robots.txt request (each redirect hop) may take; past it, the host counts
# as unreachable (see ROBOTS_ERROR_RETRY_DELAY).
ROBOTS_FETCH_TIMEOUT = 30.0
# Seconds before a robots.txt that failed (5xx, 429, timeout, network error) is tried
# again; until then its host is treated as disallowed.
ROBOTS_ERROR_RETRY_DELAY = 600
# Days a robots.txt may stay unreachable before its last good copy (or, without one,
# no restrictions) is used, as RFC 9309 allows.
ROBOTS_ERROR_GIVE_UP_DAYS = 30
# Longest Crawl-delay (seconds) a robots.txt may impose on the frontier.
ROBOTS_MAX_CRAWL_DELAY = 60.0

# --- Timeout tiers (crawler/policy/tiers.py, crawler/middlewares/timeouts.py) --------

# download_timeout of each tier, in seconds: a request that times out on tier k goes
# back to the frontier on tier k+1 (after tier k's requests of its depth); a timeout
# on the last tier gives it up.
TIMEOUTS_TIERS = [10, 30, 90]
# Escalations of one host within TIMEOUTS_SLOW_WINDOW that mark it slow (its requests
# then start on tier 1).
TIMEOUTS_SLOW_AFTER = 3
# Seconds over which a host's escalations are counted.
TIMEOUTS_SLOW_WINDOW = 3600
# Answers on tier 0 or 1 that make a slow host normal again.
TIMEOUTS_SLOW_RECOVER_AFTER = 10
# Requests of one host in a row that timed out on every tier before it is paused.
TIMEOUTS_HOST_DEAD_AFTER = 3
# Seconds a dead host is paused (its requests wait in the frontier, nothing is lost).
TIMEOUTS_HOST_PAUSE = 600
# Domain suffixes of far-away hosts, whose requests start on tier 1; or the import
# path of a function host -> bool.
TIMEOUTS_FAR_HOSTS: list[str] | str = []

# --- Retry-later (crawler/policy/holdtimes.py, crawler/middlewares/retrylater.py) --

# Seconds before each later try of a request whose failure may pass (robots.txt
# unreachable, DNS, refused or reset connections, timeouts on every tier, 429, 5xx),
# after Scrapy's immediate retries; a longer Retry-After wins. Held requests keep the
# crawl open. After the last, the failure is final. Empty: no later tries.
RETRY_LATER_DELAYS: list[float] | str = [30, 300, 1800]

# --- User-Agent and Referer (crawler/middlewares/useragent.py) ------------------------

# User-Agent headers to rotate: a list (with -s: JSON, or comma-separated; commas in
# parentheses are kept) or a path to a file with one per line (blank lines and #
# comments skipped). An empty list is a start-up error. A list you set is sent exactly
# as given. The default (current browsers plus the bot's own) names the bot in every
# entry, "compatible; {token}/{version}; +{contact}" filled in with
# ROBOTSTXT_USER_AGENT, the crawler's version and USERAGENT_CONTACT.
USERAGENT_LIST: list[str] | str = [
    # Chrome 142: Windows, macOS, Linux, Android, iOS
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; compatible; {token}/{version}; +{contact}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7; compatible; {token}/{version}; +{contact}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; compatible; {token}/{version}; +{contact}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Linux; Android 10; K; compatible; {token}/{version}; +{contact}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_6 like Mac OS X; compatible; {token}/{version}; +{contact}) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/142.0.7444.60 Mobile/15E148 Safari/604.1",
    # Firefox 145: Windows, macOS, Linux, Android, iOS
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:145.0; compatible; {token}/{version}; +{contact}) Gecko/20100101 Firefox/145.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:145.0; compatible; {token}/{version}; +{contact}) Gecko/20100101 Firefox/145.0",
    "Mozilla/5.0 (X11; Linux x86_64; rv:145.0; compatible; {token}/{version}; +{contact}) Gecko/20100101 Firefox/145.0",
    "Mozilla/5.0 (Android 15; Mobile; rv:145.0; compatible; {token}/{version}; +{contact}) Gecko/145.0 Firefox/145.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_6 like Mac OS X; compatible; {token}/{version}; +{contact}) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/145.0 Mobile/15E148 Safari/605.1.15",
    # Safari 26: macOS, iPhone, iPad (the OS version in the string is frozen)
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7; compatible; {token}/{version}; +{contact}) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.1 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_6 like Mac OS X; compatible; {token}/{version}; +{contact}) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPad; CPU OS 18_6 like Mac OS X; compatible; {token}/{version}; +{contact}) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.1 Mobile/15E148 Safari/604.1",
    # Edge 142: Windows, macOS, Android
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; compatible; {token}/{version}; +{contact}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36 Edg/142.0.0.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7; compatible; {token}/{version}; +{contact}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36 Edg/142.0.0.0",
    "Mozilla/5.0 (Linux; Android 10; K; compatible; {token}/{version}; +{contact}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Mobile Safari/537.36 EdgA/142.0.0.0",
    # The bot alone
    "Mozilla/5.0 (compatible; {token}/{version}; +{contact})",
]
# "per-request" draws a User-Agent for every request; "per-host" keeps one per host.
USERAGENT_MODE = "per-request"
# Seconds a host keeps its User-Agent in "per-host" mode.
USERAGENT_STICKY_TTL = 3600
# Page (http(s) URL) saying who runs this crawler and how to reach them: named in the
# default User-Agents and in robots.txt fetches. Start-up warns while it is this
# placeholder.
USERAGENT_CONTACT = "https://example.com/crawler-contact"
# "parent" (the page that linked here, as Scrapy's REFERRER_POLICY allows), "rotate"
# (from REFERER_LIST) or "none".
REFERER_MODE = "parent"
# Referer headers to rotate in "rotate" mode: a list or a path to a file.
REFERER_LIST: list[str] | str = []

# --- Page store, records, WARC, analysis (crawler/pipelines/, crawler/analysis/) ----

# Root of the page store: one file per page at a path mirroring its URL; empty: off.
PAGESTORE_DIR = ".crawl/pages"
# Where page records go: sqlite:///relative/path, sqlite:////absolute/path or
# postgresql://user:pass@host/db; empty: off.
RECORDS_DATABASE_URL = "sqlite:///.crawl/pages.db"
# Records written in one transaction; while the database cannot be written, up to 100
# batches are held, then the oldest are dropped (records/dropped).
RECORDS_BATCH_SIZE = 100
# Directory of WARC files of every request and response; empty: off.
WARC_DIR = ""
# Size (bytes) at which a WARC file is closed and the next one started.
WARC_MAX_SIZE = 1_000_000_000
# Queue an analysis task per stored page on a Redis Stream for `scrapy analyze`.
ANALYSIS_ENABLED = False
# Import path of the analyzer of pages no spider rule names; `scrapy analyze` loads
# only from its module, crawler.analysis.analyzers and modules given with --allow.
ANALYSIS_DEFAULT = "crawler.analysis.analyzers.TextAnalyzer"
# Attempts of a task in total (a worker dying mid-task counts) before it is
# dead-lettered and alerted.
ANALYSIS_MAX_ATTEMPTS = 3
# Seconds after which a task claimed by a worker that stopped is taken by another;
# keep it above the longest analysis, or a slow task may be run twice.
ANALYSIS_CLAIM_TIMEOUT = 60.0
# Where a dead-lettered task is reported besides the ERROR log: empty, or an
# http(s) URL that receives a JSON POST.
ANALYSIS_ALERT = ""
# Longest the task and dead-letter streams grow (approximate trimming), in tasks.
ANALYSIS_STREAM_MAXLEN = 1_000_000

# --- Revisits and the URL library (crawler/revisit/, crawler/policy/revisit.py) -----

# How fetched pages are fetched again (docs/revisits.md): "off" (each URL once, the
# crawl ends when the frontier drains), "uniform" (every REVISIT_INTERVAL), "adaptive"
# (each page by its own estimated change rate, the same budget as uniform) or
# "halving" (halve the interval on a change, double it otherwise: a baseline). Any
# other needs RECORDS_DATABASE_URL and keeps the crawl running.
REVISIT_POLICY = "off"
# Seconds: uniform's interval, a new page's first, and adaptive's budget (as many
# fetches as uniform at this interval, shared out by change rate).
REVISIT_INTERVAL = 86400.0
# Shortest interval, seconds (adaptive and halving): a fast changer's. None:
# REVISIT_INTERVAL / 24 (an hour for a day's interval).
REVISIT_MIN_INTERVAL: float | None = None
# Longest interval, seconds: where a lazy page (no change seen) drifts. None:
# 14 x REVISIT_INTERVAL (two weeks for a day's interval).
REVISIT_MAX_INTERVAL: float | None = None
# Intervals or bounds by domain suffix, the longest match wins (a dict, or JSON with
# -s): {".gov": {"interval": 604800}, "news.example": {"min_interval": 600}}.
REVISIT_OVERRIDES: dict[str, dict[str, float]] | str = {}
# Consecutive failed revisits (404, 410 or any final failure) after which a page is
# recorded gone and no longer revisited.
REVISIT_GONE_AFTER = 3
# Seconds between two looks of a node's feeder for due URLs in the database. None:
# 2 s, or half the shortest REVISIT_MIN_INTERVAL (overrides too) when that is shorter.
REVISIT_FEED_INTERVAL: float | None = None
# Most URLs claimed for a revisit and not yet recorded, crawl-wide: what Redis holds
# of the URL library at most.
REVISIT_FEED_BATCH = 1000
# Seconds after which a claimed URL whose revisit was never recorded (its request
# lost) may be claimed again.
REVISIT_CLAIM_TIMEOUT = 3600.0
# Send If-None-Match and If-Modified-Since from the stored validators: an unchanged
# page then costs a 304, without body, page-store write or link extraction.
REVISIT_CONDITIONAL = True

# --- The bfs spider (crawler/spiders/bfs.py) -----------------------------------------

# Which links are followed: "any" host, "seed-hosts" or "seed-domains".
BFS_SCOPE = "any"
# What is followed: "pages" (links to pages: <a>, <area>, frames, <link rel=next>...;
# links to images, scripts, stylesheets, PDFs and archives are only counted) or
# "resources" (those too, and what pages embed; CSS and XML files read for links).
BFS_FOLLOW = "pages"

# --- Rendering (crawler/render, crawler/render/middleware.py) -----------------------

# Who decides that a page is rendered in headless Chromium: "never" (only requests
# with meta["render"] = True), "always" (all but meta["render"] = False) or "auto"
# (learnt per host, and per URL pattern where a host mixes both, from samples).
RENDER_MODE = "never"
# The lazy-load action after the load, or a list of them run in order (JSON with
# -s): "scroll" to the end, the name of a JavaScript function the page defines (it
# is called, and awaited if it returns a promise), or a CSS selector waited for.
# meta["render_action"] overrides it per request.
RENDER_ACTION: str | list[str] = "scroll"
# Seconds a rendered page may take (load, actions, settling) on the first timeout
# tier; later tiers scale it as TIMEOUTS_TIERS scale DOWNLOAD_TIMEOUT.
RENDER_TIMEOUT = 30.0
# Pages open in the browser at once, per node.
RENDER_CONCURRENCY = 8
# What the browser's own requests may not fetch: "third-party" (any host but the
# page's), and resource types ("image", "font", "media", "stylesheet", "script",
# "fetch").
RENDER_BLOCK: list[str] | str = ["third-party", "image", "font", "media"]
# Pages a browser context renders before it is closed and a fresh one opened (bounds
# the browser's memory).
RENDER_MAX_PAGES_PER_CONTEXT = 100
# Seconds without a DOM change or a request in flight that end the wait after the
# actions (within RENDER_TIMEOUT).
RENDER_SETTLE = 0.5
# The browser's executable (a path or a name on PATH); empty: chromium,
# chromium-browser or google-chrome, the first found.
RENDER_BROWSER = ""
# RENDER_MODE = auto: pages of a host (or URL pattern) fetched both ways to learn
# whether rendering pays.
RENDER_SAMPLE_PAGES = 3
# Seconds after which a learnt decision is checked again with one more sample (0:
# never).
RENDER_RECHECK_INTERVAL = 3600.0
# A sample pays when rendering finds at least this many links the static fetch did
# not...
RENDER_MIN_GAINED_LINKS = 1
# ...or this much more text (0.2: a fifth more).
RENDER_MIN_GAINED_TEXT = 0.2

# --- Metrics (crawler/metrics/) ------------------------------------------------------

# Port of this node's Prometheus endpoint (http://METRICS_HOST:METRICS_PORT/metrics);
# None or 0: no endpoint. A port in use stops start-up (one line, exit status 1).
METRICS_PORT: int | None = None
# Address the endpoint listens on; 0.0.0.0 lets another machine's Prometheus scrape it.
METRICS_HOST = "127.0.0.1"
# Seconds between two reads of the cluster-wide gauges from Redis (queued, leased,
# hosts, nodes alive), however often /metrics is scraped; scrapes in between get the
# last read.
METRICS_REFRESH = 5.0

# --- Dashboard (scrapy frontier web) -------------------------------------------------

# The address the dashboard serves on (--host); loopback: only this machine sees it.
DASHBOARD_HOST = "127.0.0.1"
# Its port (--port; 0: any free port, printed at start).
DASHBOARD_PORT = 8080
# Seconds between two refreshes of the page's numbers.
DASHBOARD_REFRESH = 3.0


# --- Installing them ----------------------------------------------------------------


def default_settings() -> dict[str, typing.Any]:
    """Every setting of ``crawler.defaults``, by name."""
    return {name: value for name, value in globals().items() if name.isupper()}


def install_defaults(settings: BaseSettings) -> None:
    """Every default at the ``addon`` priority: below what a project or ``-s`` set."""
    for name, value in default_settings().items():
        settings.set(name, value, priority="addon")


def install_pre_crawler_settings(settings: BaseSettings) -> None:
    """What a crawl needs before any spider is built (Scrapy builds spiders before
    add-ons' ``update_settings``), and our commands too: the ``bfs`` spider's
    module, and every default."""
    settings.add_to_list("SPIDER_MODULES", "crawler.spiders")
    install_defaults(settings)
