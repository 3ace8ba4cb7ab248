"""The meta keys of one attempt, never stored with a request in the frontier.

A request's meta goes to Redis with it (``codec``), except what describes one try
rather than the request: what the downloader measured, the timeout of this timeout
tier, this attempt's lease and node, its fate, the render handler's per-attempt
keys (some hold callables). A request handed out again gets them afresh, so a
retried or re-leased request never carries a stale one.
"""

from __future__ import annotations

from crawler import meta as meta_keys

# Meta keys that describe one attempt, not the request: never stored.
# Meta of one attempt only: the timeouts middleware sets download_timeout per tier.
TRANSIENT_META = frozenset(
    {
        "download_latency",
        "download_timeout",
        meta_keys.LEASE,
        meta_keys.NODE,
        meta_keys.FATE,
        meta_keys.REPARSE,
        meta_keys.REPARSED,
        # Importance order: given afresh at every pop, passed on in the push record.
        meta_keys.IMPORTANCE,
        meta_keys.INLINKS,
        meta_keys.BACKLINKS,
        meta_keys.LINK_CREDIT,
        # Content signals: robots.txt's for this URL, and this response's.
        meta_keys.ROBOTS_SIGNALS,
        meta_keys.CONTENT_SIGNALS,
        "_frontier_host",
        # The render middleware and handler's (scrapy-playwright): decided again
        # for each attempt, and some hold callables.
        "playwright",
        "playwright_context",
        "playwright_context_kwargs",
        "playwright_include_page",
        "playwright_page",
        "playwright_page_goto_kwargs",
        "playwright_page_init_callback",
        "playwright_page_methods",
        "playwright_security_details",
        "playwright_suggested_filename",
        meta_keys.RENDER_STATIC_BODY,
        meta_keys.RENDER_DOCUMENT_AT,
    }
)
