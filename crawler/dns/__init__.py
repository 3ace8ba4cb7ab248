"""The crawl's own DNS resolution: the reactor's resolver (``resolver``), the
answers kept in memory and shared through Redis (``cache``), the lookups
themselves (``lookup``), and the extension that lends a crawl's Redis and stats to
the resolver (``sharing``). The decisions (TTLs, names, the shared entry's form)
are ``crawler/policy/dnsanswers.py``'s."""
