"""The test site's pages for a browser (tests/dynamicsite.py): what a plain fetch of
them shows, what their subrequests answer, and how --behave spells them.

Checked on a ``Site`` object (no network); that a browser really writes the links
is what tests/integration/test_rendering.py shows.
"""

from __future__ import annotations

import json

import pytest

from tests.dynamicsite import (
    THIRD_PARTY_PATH,
    app_index,
    app_mark_path,
    app_path,
    is_subresource_path,
    links_path,
    mark_path,
    rendered_app_page,
    rendered_page,
)
from tests.site import (
    Request,
    Site,
    SiteSpec,
    host_name,
    links_of,
    parse_behaviour,
    url_of,
)

SPEC = SiteSpec(hosts=6, pages=5, links=3, cross=0.5, seed=1, port=8080)
KINDS = {0: "static", 1: "script", 2: "lazy:loadMore", 3: "scroll;third-party:5"}


def site() -> Site:
    behave = dict(parse_behaviour(f"{index}={items}") for index, items in KINDS.items())
    return Site(SPEC, 0, 0, None, behave=behave)


def get(site: Site, host: int, path: str) -> tuple[int, bytes]:
    response = site.respond(host, Request("GET", path, True, {}))
    return response.status, response.body


def link_urls(host: int, page: int) -> list[str]:
    """Every URL page *page* links to, as the graph says (not as the page writes)."""
    return [url_of(SPEC, *target) for target in links_of(SPEC, host, page)]


@pytest.mark.parametrize("host", [1, 2, 3])
def test_a_dynamic_page_shows_no_link_to_a_plain_fetch(host: int) -> None:
    _, body = get(site(), host, "/p/1.html")
    html = body.decode()
    assert "href=" not in html.replace('rel="icon" href="data:,"', "")
    for url in link_urls(host, 1):
        path = url.split(f":{SPEC.port}", 1)[1]
        assert f'"{path}"' not in html
        assert url not in html


def test_a_static_page_for_a_browser_keeps_its_links_in_the_html() -> None:
    _, body = get(site(), 0, "/p/1.html")
    assert body.count(b"<a href=") == len(link_urls(0, 1))
    assert mark_path(1).encode() in body  # and shows when it is rendered


def test_a_lazy_page_defines_its_function_and_never_calls_it() -> None:
    _, body = get(site(), 2, "/p/1.html")
    assert body.count(b"loadMore") == 1  # its definition only


def test_the_links_json_lists_the_pages_links() -> None:
    status, body = get(site(), 2, links_path(1))
    assert status == 200
    hrefs = json.loads(body)["links"]
    base = f"http://{host_name(SPEC, 2)}"
    resolved = [href if href.startswith("http") else base + href for href in hrefs]
    assert resolved == link_urls(2, 1)


def test_only_pages_for_a_browser_have_subrequests() -> None:
    running = site()
    assert get(running, 1, mark_path(1))[0] == 200
    assert get(running, 1, mark_path(SPEC.pages))[0] == 404  # no such page
    assert get(running, 4, mark_path(1))[0] == 404  # a plain host
    assert get(running, 5, THIRD_PARTY_PATH)[0] == 200  # any host serves it


def test_the_third_party_script_is_in_the_pages_head() -> None:
    _, body = get(site(), 3, "/")
    assert (
        f'<script src="http://127.0.0.7:{SPEC.port}{THIRD_PARTY_PATH}">'.encode()
        in (body.split(b"</head>")[0])
    )


def test_a_plain_host_serves_the_pages_it_always_did() -> None:
    _, body = get(site(), 4, "/p/1.html")
    assert b"<script" not in body
    assert body.count(b"<a href=") == len(link_urls(4, 1))


def test_marks_and_subrequests_are_told_from_pages() -> None:
    assert rendered_page(mark_path(7)) == 7
    assert rendered_page("/p/7.html") is None
    assert rendered_page(links_path(7)) is None
    assert all(
        is_subresource_path(path)
        for path in (mark_path(1), links_path(1), THIRD_PARTY_PATH, "/favicon.ico")
    )
    assert not is_subresource_path("/p/1.html")


def mixed_site() -> Site:
    return Site(SPEC, 0, 0, None, behave=dict([parse_behaviour("1=mixed")]))


def test_a_mixed_host_enters_its_app_pages_from_its_root_only() -> None:
    running = mixed_site()
    root, page = get(running, 1, "/")[1], get(running, 1, "/p/1.html")[1]
    assert f'<a href="{app_path(0)}">'.encode() in root
    assert b"/app/" not in page
    assert page.count(b"<a href=") == len(link_urls(1, 1))  # static, as usual


def test_a_mixed_hosts_app_pages_show_no_link_to_a_plain_fetch() -> None:
    running = mixed_site()
    status, body = get(running, 1, app_path(2))
    assert status == 200
    assert b"<a href=" not in body
    for _host, page in links_of(SPEC, 1, 2):  # base64 in the script
        assert f'"{app_path(page)}"'.encode() not in body
    assert app_mark_path(2).encode() in body
    assert get(running, 1, app_mark_path(2))[0] == 200
    assert get(running, 1, app_path(SPEC.pages))[0] == 404
    assert get(site(), 1, app_path(2))[0] == 404  # only a mixed host has them


def test_app_paths_and_marks_round_trip() -> None:
    assert app_index(app_path(3), SPEC.pages) == 3
    assert app_index("/app/03.html", SPEC.pages) is None
    assert app_index(app_path(SPEC.pages), SPEC.pages) is None
    assert rendered_app_page(app_mark_path(3)) == 3
    assert rendered_page(app_mark_path(3)) is None
    assert rendered_app_page(mark_path(3)) is None


@pytest.mark.parametrize(
    ("items", "field", "value"),
    [
        ("lazy:loadMore", "function", "loadMore"),
        ("script;slow:1.5", "slow", 1.5),
        ("scroll;third-party:2", "third_party", 2),
        ("static;delay:0.5", "kind", "static"),
    ],
)
def test_browser_items_parse(items: str, field: str, value: object) -> None:
    _, behaviour = parse_behaviour(f"1={items}")
    assert getattr(behaviour.dynamic, field) == value


@pytest.mark.parametrize(
    "items",
    [
        "lazy",
        "lazy:load-more",
        "lazy:alert(1)",
        "script:x",
        "script;scroll",
        "slow:-1",
        "slow:x",
        "third-party:x",
    ],
)
def test_bad_browser_items_are_refused(items: str) -> None:
    with pytest.raises(ValueError, match=r"lazy|script|one page kind|slow|third-party"):
        parse_behaviour(f"1={items}")
