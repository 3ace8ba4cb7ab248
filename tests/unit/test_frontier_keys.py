"""Unit tests for crawler/crawlstate/keys.py: every key carries the prefix and shard tag."""

from __future__ import annotations

import inspect
import re
from fnmatch import fnmatchcase

import pytest

from crawler.crawlstate.keys import CrawlKeys, Keys

PREFIX = "crawl"
# Arguments for each key-building method, by parameter name.
ARGUMENTS = {"host": "www.example.com", "level": 17, "index": 3, "depth": 5}
SHARDS = [0, 1, 7, 10, 63, 99, 100, 1023]


def _members(cls: type) -> list[str]:
    return sorted(name for name in dir(cls) if not name.startswith("_"))


def shard_keys(keys: Keys) -> dict[str, str]:
    """Every key *keys* builds, by member name: properties and methods alike."""
    built: dict[str, str] = {}
    for name in _members(Keys):
        member = inspect.getattr_static(Keys, name)
        if isinstance(member, property):
            value = getattr(keys, name)
        elif inspect.isfunction(member):
            parameters = list(inspect.signature(member).parameters)[1:]
            unknown = set(parameters) - set(ARGUMENTS)
            assert not unknown, f"Keys.{name}: add {unknown} to ARGUMENTS"
            value = member(keys, *(ARGUMENTS[p] for p in parameters))
        else:
            continue  # the dataclass fields, prefix and shard
        assert isinstance(value, str), name
        built[name] = value
    return built


def test_every_structure_is_checked() -> None:
    """The control: the introspection finds the keys the frontier relies on."""
    found = set(shard_keys(Keys(PREFIX, 0)))
    assert {"ready", "waiting", "leases", "leased", "seen", "queue", "bloom"} <= found
    assert {"prefix", "shard"}.isdisjoint(found)


@pytest.mark.parametrize("shard", SHARDS)
@pytest.mark.parametrize("prefix", ["crawl", "bfs", "my-crawl.v2"])
def test_every_shard_key_starts_with_prefix_and_shard_tag(
    prefix: str, shard: int
) -> None:
    tag = f"{prefix}:{{s{shard:02d}}}:"
    for name, key in shard_keys(Keys(prefix, shard)).items():
        assert key.startswith(tag), (name, key)


@pytest.mark.parametrize(("shard", "tag"), [(0, "{s00}"), (7, "{s07}"), (63, "{s63}")])
def test_shard_tag_has_two_digits(shard: int, tag: str) -> None:
    assert Keys(PREFIX, shard).tag == f"{PREFIX}:{tag}:"


@pytest.mark.parametrize("shard", SHARDS)
def test_cluster_hash_tag_is_the_shard(shard: int) -> None:
    """Redis Cluster hashes the text between the first '{' and the next '}'."""
    for key in shard_keys(Keys(PREFIX, shard)).values():
        opening = key.index("{")
        closing = key.index("}", opening)
        assert key[opening + 1 : closing] == f"s{shard:02d}"
        assert re.fullmatch(r"s\d{2,}", key[opening + 1 : closing])


def test_host_with_braces_does_not_change_the_hash_tag() -> None:
    key = Keys(PREFIX, 5).queue("a{b}c", 0)
    assert key[key.index("{") + 1 : key.index("}")] == "s05"


def test_different_shards_have_different_keys() -> None:
    seen: dict[str, tuple[int, str]] = {}
    for shard in range(1024):
        for name, key in shard_keys(Keys(PREFIX, shard)).items():
            assert key not in seen, (key, seen.get(key), (shard, name))
            seen[key] = (shard, name)


def test_different_structures_have_different_keys() -> None:
    keys = list(shard_keys(Keys(PREFIX, 3)).values())
    assert len(keys) == len(set(keys))


def test_queue_keys_differ_by_host_and_level() -> None:
    keys = Keys(PREFIX, 3)
    built = {
        keys.queue(host, level)
        for host in ("a.example", "b.example")
        for level in (0, 1, 16)
    }
    assert len(built) == 6


def crawl_keys(keys: CrawlKeys) -> dict[str, str]:
    return {
        name: getattr(keys, name)
        for name in _members(CrawlKeys)
        if isinstance(inspect.getattr_static(CrawlKeys, name), property)
    }


@pytest.mark.parametrize("prefix", ["crawl", "bfs"])
def test_global_keys_start_with_prefix(prefix: str) -> None:
    built = crawl_keys(CrawlKeys(prefix))
    assert {"meta", "seeds", "pattern"} <= set(built)
    for name, key in built.items():
        assert key.startswith(f"{prefix}:"), (name, key)


def test_crawl_keys_build_the_shard_keys() -> None:
    assert CrawlKeys(PREFIX).shard(9) == Keys(PREFIX, 9)


def test_pattern_matches_every_key_of_the_crawl() -> None:
    crawl = CrawlKeys(PREFIX)
    keys = [key for name, key in crawl_keys(crawl).items() if name != "pattern"]
    for shard in (0, 17, 1023):
        keys += shard_keys(crawl.shard(shard)).values()
    for key in keys:
        assert fnmatchcase(key, crawl.pattern), key


@pytest.mark.parametrize(
    "key",
    ["crawler:meta", "other:meta", "crawl", "crawlx:{s01}:ready", "bfs:{s01}:ready"],
)
def test_pattern_does_not_match_other_crawls(key: str) -> None:
    assert not fnmatchcase(key, CrawlKeys(PREFIX).pattern)
