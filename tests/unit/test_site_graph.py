"""Unit tests for the test site's deterministic link graph (no network)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from tests.site import (
    Site,
    SiteSpec,
    bfs_depths,
    host_name,
    links_of,
    page_index,
    page_path,
    read_log,
    url_of,
)

if TYPE_CHECKING:
    from pathlib import Path

SPEC = SiteSpec(hosts=4, pages=30, links=5, cross=0.2, seed=1, port=8080)


def all_pages(spec: SiteSpec) -> list[tuple[int, int]]:
    """Every (host, page) pair the spec defines."""
    return [(h, j) for h in range(spec.hosts) for j in range(spec.pages)]


def test_links_are_deterministic() -> None:
    twin = SiteSpec(hosts=4, pages=30, links=5, cross=0.2, seed=1, port=8080)
    for h, j in all_pages(SPEC):
        assert links_of(SPEC, h, j) == links_of(twin, h, j)


def test_seed_changes_graph() -> None:
    other = SiteSpec(hosts=4, pages=30, links=5, cross=0.2, seed=2, port=8080)
    pages = all_pages(SPEC)
    assert [links_of(SPEC, *p) for p in pages] != [links_of(other, *p) for p in pages]


def test_links_stay_inside_site() -> None:
    for h, j in all_pages(SPEC):
        targets = links_of(SPEC, h, j)
        assert len(targets) >= SPEC.links
        for th, tj in targets:
            assert 0 <= th < SPEC.hosts
            assert 0 <= tj < SPEC.pages


def test_every_page_reachable_from_host0_root() -> None:
    for spec in (SPEC, SiteSpec(3, 10, 0, 0.0, 7, 0), SiteSpec(1, 1, 3, 0.5, 1, 0)):
        assert set(bfs_depths(spec, [(0, 0)])) == set(all_pages(spec))


def test_depths_are_consistent() -> None:
    depths = bfs_depths(SPEC, [(0, 0)])
    assert depths[(0, 0)] == 0
    for page, depth in depths.items():
        for target in links_of(SPEC, *page):
            assert depths[target] <= depth + 1
    assert len(set(depths.values())) > 2


def test_multiple_seeds_start_at_depth_zero() -> None:
    seeds = [(h, 0) for h in range(SPEC.hosts)]
    depths = bfs_depths(SPEC, seeds)
    assert all(depths[seed] == 0 for seed in seeds)


def test_cross_fraction_roughly_respected() -> None:
    spec = SiteSpec(hosts=5, pages=200, links=10, cross=0.3, seed=3, port=0)
    random_links = [
        (h, target)
        for h, j in all_pages(spec)
        for target in links_of(spec, h, j)[: spec.links]
    ]
    cross = sum(target[0] != h for h, target in random_links)
    assert abs(cross / len(random_links) - spec.cross) < 0.02


def test_names_and_paths() -> None:
    assert host_name(SPEC, 0) == "127.0.0.2:8080"
    assert page_path(0) == "/"
    assert page_path(3) == "/p/3.html"
    assert url_of(SPEC, 2, 3) == "http://127.0.0.4:8080/p/3.html"
    for j in range(SPEC.pages):
        assert page_index(page_path(j), SPEC.pages) == j
    for bad in ("/p/03.html", "/p/0.html", f"/p/{SPEC.pages}.html", "/p/x.html"):
        assert page_index(bad, SPEC.pages) is None


def test_page_html_matches_graph() -> None:
    site = Site(SPEC, pad_min=100, pad_max=200, log=None)
    response = site.route(1, page_path(4))
    html = response.body.decode("utf-8")
    assert response.status == 200
    assert "<title>host 1 page 4</title>" in html
    hrefs = re.findall(r'href="([^"]+)"', html)
    expected = [
        page_path(tj) if th == 1 else url_of(SPEC, th, tj)
        for th, tj in links_of(SPEC, 1, 4)
    ]
    assert hrefs == expected
    assert site.route(1, "/robots.txt").status == 404
    assert site.route(1, "/nope").status == 404


def test_read_log_ignores_partial_last_line(tmp_path: Path) -> None:
    path = tmp_path / "site.log"
    entry = {"t": 1.0, "host": "127.0.0.2:1", "path": "/", "method": "GET"}
    path.write_text(json.dumps(entry) + "\n" + '{"t": 2.', encoding="utf-8")
    assert read_log(path) == [entry]
