"""Defaults of the rendering settings (``RENDER_*``): when a page is rendered in
headless Chromium, how, and how "auto" learns it, read by crawler/render/."""

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
