"""Defaults of the DNS settings (``DNS_*``): which servers are asked, how long their
answers are shared, how many lookups run at once, read by crawler/dns/ through
crawler/policy/dnsanswers.py. Scrapy's own DNS_TIMEOUT bounds each lookup and its
DNSCACHE_SIZE the answers a process keeps in memory."""

# The process' resolver: every fetch's name is resolved by it, its answers shared
# through the crawl's Redis. Scrapy's own (scrapy.resolver.CachingThreadedResolver)
# turns sharing off.
TWISTED_DNS_RESOLVER = "crawler.dns.resolver.CrawlResolver"
# DNS servers to ask, as ADDRESS or ADDRESS:PORT (a list, or comma-separated);
# empty: the system's, from /etc/resolv.conf. Names in /etc/hosts are answered
# from it either way.
DNS_SERVERS: list[str] | str = []
# Shortest time (seconds) an answer is kept, whatever its TTL says: a TTL of 0 does
# not make every fetch a query.
DNS_MIN_TTL = 60.0
# Longest time (seconds) an answer is kept, whatever its TTL says: a moved host is
# found within this.
DNS_MAX_TTL = 3600.0
# Seconds a name that does not exist (or has no address) is remembered as such.
DNS_NEGATIVE_TTL = 60.0
# Lookups in flight at once in one process; more wait their turn.
DNS_CONCURRENCY = 32
# Names of hosts this node is to fetch within this many seconds (its best ready
# hosts, and those whose delay ends by then) are resolved before their fetch, once a
# second, so that a fetch rarely waits for DNS; 0 turns it off.
DNS_RESOLVE_AHEAD = 10.0
