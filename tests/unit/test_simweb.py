"""The simulated webs of the importance benchmarks, and their PageRank."""

from __future__ import annotations

import collections
import ipaddress
import math
from urllib.parse import urlsplit

import pytest

from bench import simweb

SMALL = simweb.Shape("test-2k", pages=2000, hosts=120, seed=11)


@pytest.fixture(scope="module")
def web() -> simweb.Web:
    return simweb.build(SMALL)


@pytest.fixture(scope="module")
def rank(web: simweb.Web) -> list[float]:
    return simweb.pagerank(web.links)


def test_pagerank_sums_to_one_and_is_positive(rank: list[float]) -> None:
    assert math.isclose(sum(rank), 1.0, rel_tol=1e-9)
    assert min(rank) > 0


def test_pagerank_ranks_a_stars_centre_first() -> None:
    # Pages 1..5 link to 0; 0 links to 1; page 6 links nowhere (dangling).
    links = [[1], [0], [0], [0], [0], [0], []]
    rank = simweb.pagerank(links)
    assert max(range(len(rank)), key=rank.__getitem__) == 0
    assert rank[1] > rank[2] == pytest.approx(rank[5])
    assert math.isclose(sum(rank), 1.0, rel_tol=1e-9)


def test_pagerank_of_a_cycle_is_uniform() -> None:
    rank = simweb.pagerank([[1], [2], [3], [0]])
    assert rank == pytest.approx([0.25] * 4)


def test_dangling_mass_is_spread_uniformly() -> None:
    # Page 1 has no out-links: its mass goes to both pages, so 0 and 1 stay equal.
    rank = simweb.pagerank([[1], []])
    expected_dangling = (1 - simweb.DAMPING) / 2 + simweb.DAMPING * rank[1] / 2
    assert rank[0] == pytest.approx(expected_dangling)
    assert rank[1] == pytest.approx(expected_dangling + simweb.DAMPING * rank[0])


def test_the_same_shape_builds_the_same_web(web: simweb.Web) -> None:
    again = simweb.build(SMALL)
    assert again.paths == web.paths
    assert again.links == web.links
    assert again.seeds == web.seeds


def test_a_web_has_the_shapes_size_and_hosts(web: simweb.Web) -> None:
    assert len(web.hosts) == SMALL.hosts
    assert 0.7 * SMALL.pages <= len(web.paths) <= 1.3 * SMALL.pages
    assert len(set(web.hosts)) == len(web.hosts)
    assert {"portal", "deep", "plain"} <= set(web.kinds)


def test_in_degree_is_heavy_tailed(web: simweb.Web) -> None:
    """Power law, roughly: the complementary CDF falls like k**-a, a in 1..3.5,
    over in-degrees 8..256 (a Poisson or uniform graph falls far faster)."""
    degrees = web.in_degrees()
    counts = collections.Counter(degrees)
    n = len(degrees)

    def ccdf(k: int) -> float:
        return sum(c for d, c in counts.items() if d >= k) / n

    slope = (math.log(ccdf(256)) - math.log(ccdf(8))) / (math.log(256) - math.log(8))
    assert -3.5 < slope < -1.0
    assert max(degrees) > 50 * sorted(degrees)[n // 2]


def test_important_pages_are_not_all_shallow(
    web: simweb.Web, rank: list[float]
) -> None:
    depth = _depths(web)
    top = sorted(range(len(rank)), key=rank.__getitem__, reverse=True)[
        : len(rank) // 20
    ]
    assert sum(1 for page in top if depth[page] >= 3) > len(top) // 4
    assert max(depth) >= 6  # navigation chains reach deep


def test_almost_every_page_is_reachable_from_the_seeds(web: simweb.Web) -> None:
    assert len(web.seeds) == SMALL.seeds
    assert all(web.paths[seed] == "/" for seed in web.seeds)
    reached = sum(1 for d in _depths(web) if d >= 0)
    assert reached >= 0.95 * len(web.paths)


def test_urls_look_real_and_hosts_map_to_own_loopback_addresses(
    web: simweb.Web,
) -> None:
    urls = [web.url(page, port=8080) for page in range(len(web.paths))]
    assert len(set(urls)) == len(urls)
    for url in urls:
        parts = urlsplit(url)
        assert parts.scheme == "http"
        assert parts.port == 8080
        assert parts.path.startswith("/")
    assert any("?page=" in url for url in urls)
    assert any(url.endswith("/index.html") for url in urls)
    addresses = web.addresses()
    assert sorted(addresses) == sorted(web.hosts)
    assert len(set(addresses.values())) == len(addresses)
    for address in addresses.values():
        parsed = ipaddress.ip_address(address)
        assert parsed.is_loopback
        assert not address.startswith("127.0.0.")  # the tests' own sites live there


def _depths(web: simweb.Web) -> list[int]:
    """Each page's link distance from the seeds (-1: unreachable)."""
    depth = [-1] * len(web.paths)
    queue = collections.deque(web.seeds)
    for seed in web.seeds:
        depth[seed] = 0
    while queue:
        page = queue.popleft()
        for target in web.links[page]:
            if depth[target] < 0:
                depth[target] = depth[page] + 1
                queue.append(target)
    return depth
