"""crawler/storage/address.py: the three forms of a storage address, refused ones in
one line naming the setting, and keys that never leave their address."""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.storage.address import StoreAddress, check_key
from crawler.storage.errors import UnsafePathError


@pytest.mark.parametrize(
    ("text", "scheme", "root", "bucket", "prefix"),
    [
        (".crawl/pages", "file", Path(".crawl/pages"), "", ""),
        ("/srv/pages", "file", Path("/srv/pages"), "", ""),
        ("file:///srv/pages", "file", Path("/srv/pages"), "", ""),
        ("file://localhost/srv/my%20pages", "file", Path("/srv/my pages"), "", ""),
        ("s3://crawl-pages", "s3", None, "crawl-pages", ""),
        ("s3://crawl-pages/", "s3", None, "crawl-pages", ""),
        ("s3://crawl.pages/2026/11/", "s3", None, "crawl.pages", "2026/11"),
        ("S3://abc/x", "s3", None, "abc", "x"),
    ],
)
def test_the_three_forms(text, scheme, root, bucket, prefix):
    address = StoreAddress.parse(text, "PAGESTORE_URL")
    assert (address.scheme, address.root, address.bucket, address.prefix) == (
        scheme, root, bucket, prefix,
    )  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "file://otherhost/srv",
        "file://",
        "s3://",
        "s3://UPPER",
        "s3://ab",
        "s3://a_b_c",
        "s3://-bucket",
        "s3://a..b",
        "s3://bucket/../x",
        "s3://bucket/a/./b",
        "s3://bucket/x?versionId=1",
        "s3://bucket/x#y",
        "hdfs://namenode:8020/pages",
        "http://example.com/pages",
    ],
)
def test_anything_else_is_refused_in_one_line_naming_the_setting(text):
    with pytest.raises(ValueError, match="PAGESTORE_URL") as refused:
        StoreAddress.parse(text, "PAGESTORE_URL")
    assert "\n" not in str(refused.value)


def test_a_key_becomes_its_full_address_and_back():
    address = StoreAddress.parse("s3://pages/crawl", "PAGESTORE_URL")
    key = "http/h_81/dir@/%41.html+x%3D1"
    url = address.url_of(key)
    assert url == "s3://pages/crawl/http/h_81/dir@/%41.html+x%3D1"
    assert address.object_key(key) == "crawl/" + key
    assert address.key_of(url) == key


def test_a_local_key_becomes_a_file_url_and_back(tmp_path):
    address = StoreAddress.parse(str(tmp_path / "pages"), "PAGESTORE_URL")
    key = "http/h/dir@/%41 b.html"
    url = address.url_of(key)
    assert url.startswith("file:///")
    assert address.key_of(url) == key


@pytest.mark.parametrize(
    "url",
    [
        "s3://other/crawl/http/h/a.html",  # another bucket
        "s3://pages/crawl2/http/h/a.html",  # a prefix that only starts the same
        "s3://pages/http/h/a.html",  # outside the prefix
        "s3://pages/crawl/../secret",
        "s3://pages/crawl/http//a",
        "s3://pages/crawl/",
        "file:///etc/passwd",
    ],
)
def test_a_full_address_outside_the_store_is_refused(url):
    address = StoreAddress.parse("s3://pages/crawl", "PAGESTORE_URL")
    with pytest.raises(UnsafePathError):
        address.key_of(url)


@pytest.mark.parametrize(
    "key", ["", "/a", "a/", "a//b", ".", "..", "a/../b", "a/./b", "a\\b", "a\0b",
            "x" * 1025],
)  # fmt: skip
def test_unsafe_keys_are_refused(key):
    with pytest.raises(UnsafePathError):
        check_key(key)


@given(st.text(alphabet=st.sampled_from("ab./\\\0%"), max_size=30))
def test_a_key_that_passes_never_leaves_its_root(key):
    try:
        check_key(key)
    except UnsafePathError:
        return
    joined = posixpath.normpath(posixpath.join("/root/prefix", key))
    assert joined.startswith("/root/prefix/")
