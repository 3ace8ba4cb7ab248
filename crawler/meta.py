"""Every ``Request.meta`` key one component sets and another reads, named once.

A key set and read by one module only stays in that module. Scrapy's own keys
(``depth``, ``download_timeout``, ``dont_retry``...) keep Scrapy's spelling where
they are used, except the one two of our components honour for the user.
"""

from __future__ import annotations

from typing import Any

# The lease of a request handed out by the frontier ("<shard>:<lease id>").
LEASE = "frontier_lease"
# The node a leased request was handed to (for page records).
NODE = "frontier_node"
# How many times the request was held back to be tried again later (retry-later).
HELD_TIMES = "frontier_held_times"
# Epoch seconds before which a held request must not be fetched again.
HOLD_UNTIL = "frontier_hold_until"
# Set by the bfs spider on a link it found new in the crawl's local seen cache, and
# added there (crawler.context.seencache): the frontier does not look it up again.
LINK_CHECKED = "frontier_link_checked"
# The fate of a request that failed for good (crawler.policy.fates), and its error.
FATE = "frontier_fate"
# The timeout tier a request is sent on (crawler.policy.tiers): set by the timeouts
# middleware, queued with the request by the frontier, kept in its page record. Its
# spelling predates the others': queue entries and users' spiders carry it.
TIER = "tier"
# Marks the crawler's own robots.txt fetches (never Scrapy's dont_obey_robotstxt,
# which a user's request may carry for its own reasons).
ROBOTS_FETCH = "frontier_robots_fetch"
# Scrapy's key for a user's request robots.txt does not apply to: the robots
# middleware lets it pass, the robots link filter keeps it.
DONT_OBEY_ROBOTSTXT = "dont_obey_robotstxt"
# Set by a spider on a request whose temporary failures are final at once (no
# retry-later hold).
DONT_RETRY_LATER = "dont_retry_later"
# A page fetched at a depth a shorter path has since beaten: its links are to be
# followed again at their true depths (depth repair).
REPARSE = "frontier_reparse"
# Set when such a page was answered from the page store, so its host's politeness
# delay is not spent on it.
REPARSED = "frontier_reparsed"
# How many times the request was sent back to the frontier unchanged, to be queued
# under its own host (a reparse whose page the page store lacks).
REQUEUED = "frontier_requeued"
# The server gate a leased request holds (POLITENESS_KEY = ip or domain): [server,
# lease], set by the server gate middleware, handed back with the lease's ack.
SERVER_GATE = "frontier_server_gate"
# Set on a leased request sent back because its server's gate was taken: until when
# (epoch seconds) its host is to wait.
SERVER_BUSY_UNTIL = "frontier_server_busy_until"
# A start request (Scrapy makes them dont_filter) that went through the seen filter
# once, since every node yields it: its later copies (retries) are not filtered.
STARTED = "frontier_started"
# A seed: enqueued again even when the seen filter knows it, if it failed for good.
REVIVE = "frontier_revive"
# A revisit of a page in the URL library (crawler.revisit): {"hash": the SHA-256 of
# the stored version's body, "due": when the revisit was due}.
REVISIT = "frontier_revisit"
# Set by a spider (or a user): True renders the page in headless Chromium whatever
# RENDER_MODE, False never renders it.
RENDER = "render"
# The lazy-load action(s) of one rendered request (overrides RENDER_ACTION).
RENDER_ACTION = "render_action"
# A rendered fetch picked as a sample (RENDER_MODE = auto): its rendered page is
# compared with its main document as the host served it (RENDER_KEEP_STATIC).
RENDER_SAMPLE = "frontier_render_sample"
# Set on a rendered request (by a spider or the render advisor): keep the page's
# main document as its host served it, before any script ran, so that one browser
# fetch gives both the static and the rendered page.
RENDER_KEEP_STATIC = "render_keep_static"
# On the response of such a request: those bytes (never stored with the request).
RENDER_STATIC_BODY = "frontier_render_static_body"
# On a rendered request: when (epoch seconds) its main document had arrived. The
# host's politeness delay counts from then, not from the end of the render: what the
# browser does with the page after that costs the host nothing but the page's own
# subrequests.
RENDER_DOCUMENT_AT = "frontier_render_document_at"
# The importance I(P) = alpha * IB(P) + beta * IL(P) a request was popped with
# (FRONTIER_ORDER = importance), and the in-links counted for it by then: set by the
# frontier on a popped request, kept in its page record.
IMPORTANCE = "frontier_importance"
INLINKS = "frontier_inlinks"
# Its backlink importance IB(P) then (what its own links pass on).
BACKLINKS = "frontier_backlinks"
# The credit a link passes on (crawler.policy.importance.LinkCredit), set on each
# request a page yields by LinkCreditMiddleware or the bfs spider.
LINK_CREDIT = "frontier_link_credit"
# The links a spider read on a page, and how many of them leave the page's site,
# set on the response by a spider that reads every link of a page but yields only
# some (bfs: those in scope, not yielded before) for the site history middleware
# (crawler.spiders.sitehistory); without it, the middleware counts what is yielded.
SITE_LINKS = "frontier_site_links"
# The signature of every link a page has, read relative to its own place
# (crawler.policy.duplicateurls.links_signature), set on the response by a spider
# that reads every link (bfs) for the near-duplicate middleware: a copy of a page
# under another path has its original's signature, and its links are not followed.
LINKS_SIGNATURE = "frontier_links_signature"
# The content signals robots.txt states for a request's URL, set by the robots
# middleware as [the URL, signals] (crawler.policy.contentsignals.Signals): a copy
# that travelled to another URL's request in a spider's meta is told apart.
ROBOTS_SIGNALS = "frontier_robots_signals"
# A response's content signals, robots.txt's and its own headers', set by the content
# signals middleware for its page record.
CONTENT_SIGNALS = "frontier_content_signals"


def is_page_fetch(meta: dict[str, Any]) -> bool:
    """Whether a request with *meta* is a page of the crawl asked of its site: one
    the frontier leased, neither a robots.txt fetch nor a depth repair's page."""
    return LEASE in meta and not meta.get(ROBOTS_FETCH) and not meta.get(REPARSE)
