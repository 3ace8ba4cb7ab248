"""The page store's path scheme (crawler/policy/storepath.py): examples and properties."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path, PurePosixPath
from urllib.parse import unquote_to_bytes, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.storepath import store_path, url_of
from crawler.storage.local import write_file
from tests.unit.properties import PROPERTY

# The examples of docs/pagestore.md: URL, path, URL url_of gives back.
EXAMPLES = [
    ("http://example.com/", "http/example.com/index.html", None),
    ("http://Example.COM", "http/example.com/index.html", "http://example.com/"),
    ("https://example.com/", "https/example.com/index.html", None),
    ("http://example.com:8080/a.html", "http/example.com_8080/a.html", None),
    ("http://example.com:80/a.html", "http/example.com/a.html", "http://example.com/a.html"),
    ("https://example.com:443/", "https/example.com/index.html", "https://example.com/"),
    ("https://example.com:80/", "https/example.com_80/index.html", None),
    ("http://example.com/docs/guide/intro.html", "http/example.com/docs@/guide@/intro.html", None),
    ("http://example.com/docs/", "http/example.com/docs@/index.html", None),
    ("http://example.com/docs", "http/example.com/docs", None),
    ("http://example.com/docs/index.html", "http/example.com/docs@/index%2Ehtml", None),
    ("http://example.com/A.html", "http/example.com/%41.html", None),
    ("http://example.com/a.html", "http/example.com/a.html", None),
    ("http://example.com/search?q=a b&x=1", "http/example.com/search+q%3Da%20b%26x%3D1", None),
    ("http://example.com/?page=2", "http/example.com/index.html+page%3D2", None),
    ("http://example.com/a?", "http/example.com/a", "http://example.com/a"),
    ("http://example.com/a#top", "http/example.com/a", "http://example.com/a"),
    ("http://user:pw@example.com/a", "http/example.com/a", "http://example.com/a"),
    ("http://example.com/x/%2e%2e/%2E%2E/etc/passwd", "http/example.com/x@/%2E%2E@/%2E%2E@/etc@/passwd", "http://example.com/x/../../etc/passwd"),
    ("http://example.com/x/../y/./z", "http/example.com/x@/%2E%2E@/y@/%2E@/z", None),
    ("http://example.com/%2fetc%2fpasswd", "http/example.com/%2Fetc%2Fpasswd", "http://example.com/%2Fetc%2Fpasswd"),
    ("http://example.com/a%00b", "http/example.com/a%00b", None),
    ("http://example.com/C:/Windows", "http/example.com/%43%3A@/%57indows", None),
    ("http://example.com/a%5C..%5Cb", "http/example.com/a%5C..%5Cb", "http://example.com/a%5C..%5Cb"),
    ("http://example.com/a//b", "http/example.com/a@/@/b", None),
    ("http://example.com/con", "http/example.com/%63on", None),
    ("http://example.com/nul.txt", "http/example.com/%6Eul.txt", None),
    ("http://example.com/com1/lpt9.html", "http/example.com/%63om1@/%6Cpt9.html", None),
    ("http://example.com/.htaccess", "http/example.com/%2Ehtaccess", None),
    ("http://example.com/-rf", "http/example.com/%2Drf", None),
    ("http://example.com/a.", "http/example.com/a%2E", None),
    ("http://example.com/caf%C3%A9/☃", "http/example.com/caf%C3%A9@/%E2%98%83", "http://example.com/caf%C3%A9/%E2%98%83"),
    ("http://example.com/a@b+c,d", "http/example.com/a%40b%2Bc%2Cd", None),
    ("http://my_host/", "http/my%5Fhost/index.html", None),
    ("http://[::1]:8080/", "http/%5B%3A%3A1%5D_8080/index.html", None),
    ("http://con/", "http/%63on/index.html", None),
]  # fmt: skip


@pytest.mark.parametrize(("url", "path", "back"), EXAMPLES, ids=lambda v: str(v)[:40])
def test_examples_map_to_their_documented_path(url, path, back):
    assert store_path(url) == PurePosixPath(path)
    assert url_of(store_path(url)) == (back or url)


def test_examples_are_the_documented_ones():
    doc = (Path(__file__).parents[2] / "docs" / "pagestore.md").read_text("utf-8")
    for url, path, _ in EXAMPLES:
        assert f"`{path}`" in doc, url


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/", "mailto:a@b.c", "http:///path", "http://h:x/", "/etc/passwd",
     "C:\\Windows", "", "http://[::1/", "javascript:alert(1)", "http://h:1٢/"],
)  # fmt: skip
def test_urls_without_a_page_path_raise_value_error(url):
    with pytest.raises(ValueError):  # noqa: PT011 (any one-line reason will do)
        store_path(url)


@pytest.mark.parametrize(
    "urls",
    [
        ("http://h/A", "http://h/a"),
        ("http://h/Index.HTML", "http://h/index.html"),
        ("http://h/a", "http://h/a/", "http://h/a/b", "http://h/a/index.html"),
        ("http://h/", "http://h/index.html", "http://h/index.html/"),
        ("http://h/a", "http://h/a%3F", "http://h/a?b", "http://h/a%3Fb"),
        ("http://h/a/b", "http://h/a%2Fb", "http://h/a/b/"),
        ("http://h/a", "http://h/a@", "http://h/a/x", "http://h/a/"),
        ("http://h/", "https://h/", "http://h:443/", "https://h:80/"),
        ("http://h_1/", "http://h:1/"),
        ("http://h/con", "http://h/CON", "http://h/con/", "http://h/Con"),
        ("http://h/a?q", "http://h/a+q", "http://h/a?Q"),
    ],
)
def test_different_urls_never_share_a_file_even_without_case(urls):
    paths = [str(store_path(url)) for url in urls]
    assert len({path.lower() for path in paths}) == len(urls), paths


@pytest.mark.parametrize(
    "urls",
    [
        ("http://h/a", "HTTP://H/a", "http://h:80/a", "http://h:080/a", "http://h/a#x"),
        ("http://h/%2e%2e", "http://h/..", "http://h/%2E."),
        ("http://h/con", "http://h/%63on"),
        ("http://h/a@", "http://h/a%40"),
        ("http://h/a%2fb", "http://h/a%2Fb"),
        ("http://h/caf%C3%A9", "http://h/café", "http://h/caf%c3%a9"),
        ("http://h/", "http://h", "http://h/?", "http://u@h/"),
    ],
)
def test_equivalent_spellings_share_a_file(urls):
    assert len({store_path(url) for url in urls}) == 1


@pytest.mark.parametrize("length", [254, 255, 256, 300, 1000, 20_000])
def test_long_names_are_shortened_with_a_hash(length):
    a, b = (
        store_path(f"http://h/{'x' * length}"),
        store_path(f"http://h/{'x' * length}y"),
    )
    dirs = store_path(f"http://h/{'x' * length}/z")
    for path in (a, b, dirs):
        assert all(len(part) <= 255 for part in path.parts)
    assert len({a, b, dirs.parent}) == 3
    assert (url_of(a) is None) == (length > 255)


def test_a_long_host_and_query_are_shortened_too():
    path = store_path(f"http://{'h' * 400}.example/?{'q' * 400}")
    assert all(len(part) <= 255 for part in path.parts)
    assert url_of(path) is None


def test_a_very_long_path_is_hashed_under_its_host():
    url = "http://h/" + "/".join(["d" * 200] * 30)
    path = store_path(url)
    assert path.parent == PurePosixPath("http/h")
    assert path.name.startswith(",")
    assert store_path(url + "x") != path
    assert url_of(path) is None


@pytest.mark.parametrize("path", ["ftp/h/a", "http", "http/h/a,1234", "/abs"])
def test_url_of_rejects_or_gives_up_on_foreign_paths(path):
    if "," in path:
        assert url_of(path) is None
    else:
        with pytest.raises(ValueError):  # noqa: PT011 (any one-line reason will do)
            url_of(path)


# --- properties ------------------------------------------------------------------

HOSTILE_PARTS = [
    "..", ".", "%2e%2e", "%2E%2e", "%2e", "%2f", "%2F..%2F..", "\x00", "%00", "/",
    "//", "\\", "..\\..", "C:\\", "C:", "c:%5c", "\\\\?\\C:\\", "~", "con", "NUL.txt",
    "COM1", "index.html", "Index.html", "a.", " ", "-rf", ".git", "é", "☃", "\udcff",
    "\u212a", "%", "%zz", "%C3", "?", "#", "@", "+", ",", "_", ";", "x" * 300,
    "%41" * 100, "a" * 10_000,
]  # fmt: skip
PREFIXES = [
    "http://h/", "http://h", "https://H:443/", "http://h:8080", "http://[::1]:81/",
    "http://user:pw@h/", "HTTP://h.example/", "http://h/..", "http://h_1/", "http://\u212a/",
]  # fmt: skip
hostile_paths = st.lists(
    st.sampled_from(HOSTILE_PARTS) | st.text(max_size=20), max_size=12
)
hostile_urls = st.builds(
    lambda prefix, parts, query: prefix + "/".join(parts) + query,
    st.sampled_from(PREFIXES),
    hostile_paths,
    st.sampled_from(["", "?", "?a=b", "?../..", "?%2e%2e/x", "?\x00"])
    | st.text().map("?{}".format),
)
any_urls = (
    st.text() | st.text().map("http://h/{}".format) | st.text().map("http://{}".format)
)


def assert_safe(path: PurePosixPath) -> None:
    """Relative, no empty/./.. part, no NUL, short parts and path, ASCII names."""
    text = str(path)
    assert not path.is_absolute()
    assert len(path.parts) >= 3
    assert all(part not in ("", ".", "..") for part in path.parts)
    assert all(len(part.encode()) <= 255 for part in path.parts)
    assert len(text.encode()) <= 2048
    assert re.fullmatch(r"[a-z0-9._%@+,/A-F-]+", text), text
    assert not any(part.startswith(".") for part in path.parts)


def case_folded_back(text: str) -> str:
    """Undo lowercasing of a store path: only escapes' hex digits are uppercase."""
    return re.sub(r"%[0-9a-f]{2}", lambda match: match[0].upper(), text.lower())


@PROPERTY
@given(st.one_of(hostile_urls, any_urls))
def test_every_url_maps_to_a_safe_relative_path_or_to_value_error(url):
    try:
        path = store_path(url)
    except ValueError:
        return
    assert_safe(path)
    assert case_folded_back(str(path)) == str(path)  # no case-only difference
    back = url_of(path)
    assert back is None or store_path(back) == path  # a left inverse: injective


def reference_canonical(url: str) -> tuple[object, ...]:
    """What identifies a page, written independently of the scheme's code."""
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}[parts.scheme]
    segments = parts.path.split("/")[1:] or [""]
    decoded = tuple(
        unquote_to_bytes(s.encode("utf-8", "surrogatepass")) for s in segments
    )
    return parts.scheme, parts.hostname, port, decoded, parts.query


CLOSE_PARTS = [
    "", ".", "..", "%2e", "%2E", "a", "A", "%41", "%61", "%2f", "/", "index.html",
    "con", "%63on", "a.", "a%2E", "-a", "@", "%40", "+", ",", "é", "%C3%A9", "x" * 260,
    "x" * 261, "_",
]  # fmt: skip
close_urls = st.builds(
    lambda scheme, host, port, parts, query: (
        f"{scheme}://{host}{port}/{'/'.join(parts)}{query}"
    ),
    st.sampled_from(["http", "HTTP", "https"]),
    st.sampled_from(["h", "H", "h_1", "h%5F1", "g"]),
    st.sampled_from(["", ":80", ":080", ":443", ":1", ":"]),
    st.lists(st.sampled_from(CLOSE_PARTS), max_size=4),
    st.sampled_from(["", "?", "?a", "?A", "?a=b", "?%41", "?+", "?a/b"]),
)


@PROPERTY
@given(close_urls, close_urls)
def test_two_urls_share_a_path_exactly_when_they_are_the_same_page(first, second):
    same_page = reference_canonical(first) == reference_canonical(second)
    one, two = str(store_path(first)), str(store_path(second))
    assert (one == two) == same_page, (first, second, one, two)
    assert (one.lower() == two.lower()) == same_page  # case-insensitive file systems


@PROPERTY
@given(st.lists(st.one_of(hostile_urls, any_urls), min_size=1, max_size=8))
def test_writing_any_url_stays_inside_the_root(urls):
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Path(tmp)
        root = sandbox / "root"
        root.mkdir()
        written = {}
        for index, url in enumerate(urls):
            try:
                relative = store_path(url)
            except ValueError:
                continue
            target = write_file(root, relative.as_posix(), f"page {index}".encode())
            assert target.resolve().is_relative_to(root.resolve())
            written[relative] = index
        files = [p for p in sandbox.rglob("*") if p.is_file() or p.is_symlink()]
        assert all(p.is_relative_to(root) for p in files), files
        assert {p.relative_to(root) for p in files} == set(written)
        for relative, index in written.items():
            assert (root / relative).read_bytes() == f"page {index}".encode()
