"""Defaults of the Scrapy built-in settings we change: depth, concurrency, robots.txt,
body sizes, log pace. Scrapy reads them; the add-on installs our values over Scrapy's
own, for a polite breadth-first crawl."""

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
# Scrapy's "Crawled N pages (at X pages/min)" line is off: the frontier's progress
# line (FRONTIER_LOG_INTERVAL) says that and more, for the whole crawl. Set a number
# of seconds to have Scrapy's line back (a project with its own SCHEDULER may).
LOGSTATS_INTERVAL = 0.0
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
# Scrapy's telnet console: off, as its password and port lines at start; a crawl is
# watched with `scrapy frontier status`, and several nodes on one machine would
# each take a port. TELNETCONSOLE_ENABLED=True turns it on.
TELNETCONSOLE_ENABLED = False
# Scrapy's remote-control HTTP server (Scrapy 2.19): off, as the telnet console; a
# crawl is steered with `scrapy frontier pause|resume|set`, across every node.
# REMOTE_CONTROL_ENABLED=True turns it on.
REMOTE_CONTROL_ENABLED = False
