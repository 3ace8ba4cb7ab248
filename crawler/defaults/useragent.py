"""Defaults of the User-Agent and Referer settings (``USERAGENT_*``, ``REFERER_*``):
the headers rotated, how, and the contact page named in them, read by
crawler/middlewares/useragent.py."""

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
