"""Defaults of the politeness settings (``POLITENESS_*``): each host's delay by its
local day and night, jitter and caps, decided in crawler/policy/politeness.py and
applied by the frontier."""

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
# Learn each host's delay from its answers: a 429, a 503 or a timeout raises it
# (x1.1, x2 after another throttle), a quiet run lowers it by 3%; shared by every
# node through the crawl state (docs/politeness.md#back-off-that-learns).
POLITENESS_BACKOFF = True
# The longest delay a host's answers can teach, in seconds.
POLITENESS_MAX_DELAY = 120.0
# Answers in a row without a throttle before a learnt delay falls by 3%.
POLITENESS_BACKOFF_QUIET = 30
# What one delay is counted against: "host" (each host name), "ip" (every name
# that resolves to one address shares its delay and one request in flight, across
# the cluster) or "domain" (every host of a registered domain).
# docs/politeness.md#politeness-per-server says why "host" is the default.
POLITENESS_KEY = "host"
