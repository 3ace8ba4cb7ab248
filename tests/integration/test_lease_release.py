"""Every request that fails releases its lease, however it fails: a redirect to a
scheme the crawler does not fetch (refused in RedirectMiddleware.process_response,
which no process_exception sees) must not block its host."""

from __future__ import annotations

import pytest

from tests.integration.test_node_failures import leased, run, scrapy_crawl
from tests.servers import running_site
from tests.site import bfs_depths, url_of

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("trap", ["/trap/redirect-javascript", "/trap/redirect-mailto"])
def test_a_redirect_to_an_unfetchable_scheme_releases_its_host(redis, redis_url, trap):
    with running_site(hosts=1, pages=15, links=3) as site:
        host = site.seeds[0].rstrip("/")
        # The trap goes first; with one request per host at a time, a lease never
        # released would keep every other page of the host from being fetched.
        seeds = f"{host}{trap},{site.seeds[0]}"
        result = run(
            [
                *scrapy_crawl(
                    f"REDIS_URL={redis_url}",
                    "FRONTIER_HOST_CONCURRENCY=1",
                    "FRONTIER_LEASE_TIMEOUT=600",  # no expiry comes to the rescue
                    seeds=seeds,
                ),
                *("-a", "scope=seed-hosts"),
            ]
        )
        assert result.returncode == 0, result.stderr[-3000:]
        fetched = {f"http://{row['host']}{row['path']}" for row in site.pages()}
        pages = {url_of(site.spec, h, p) for h, p in bfs_depths(site.spec, [(0, 0)])}
    assert f"{host}{trap}" in fetched  # the trap was fetched first...
    assert pages <= fetched  # ...and every page of its host after it
    assert leased(redis) == 0
