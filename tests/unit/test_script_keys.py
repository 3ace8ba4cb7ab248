"""The Lua scripts build the key names the key model (crawler/crawlstate/keys.py)
builds, and take the arguments their signatures name: run on a real Redis."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from scrapy.settings import Settings

from crawler.crawlstate.keys import KEY_SHAPES, CrawlKeys, Keys
from crawler.frontier.dedup import bloom_hashes
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.store.scriptargs import COMMON, SIGNATURES
from crawler.frontier.store.scriptkeys import SHARD_KEYS, lua_keys
from crawler.frontier.store.scripts import ScriptRunner, script_source
from crawler.frontier.store.store import FrontierStore, Pending, PopOrder
from crawler.policy.order import level_of, queue_class

if TYPE_CHECKING:
    import redis as redis_py

T0 = 1_000_000.0
NODE = "node"
HOSTS = ["www.example.com", "a:8080", "b{c}d", "ünï.example", "q:x:1"]


def keys_in(redis: redis_py.Redis) -> set[str]:
    return {key.decode() for key in redis.scan_iter(count=1000)}


def test_the_scripts_write_the_keys_the_key_model_names(redis: redis_py.Redis) -> None:
    """A push deep enough to be provisional, a pop, a damaged entry set aside: every
    key the scripts wrote is one the key model names, and each shape is among them."""
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.update({"FRONTIER_SHARDS": 1, "FRONTIER_DEDUP_CAPACITY": 1000})
    store = FrontierStore.on(redis, FrontierConfig.from_settings(settings, "t"))
    store.prepare(T0)
    keys = store.shards.keys[0]
    redis.set(keys.owner, NODE)
    level = level_of(3)  # deeper than one past the lowest depth: provisional
    dedup = bloom_hashes(b"fp", 80)
    request = Pending(0, "www.example.com", level, dedup, '{"u":1}', depth_key="ab12")
    store.flush([request], [], T0)
    cls = queue_class(level, 0)
    pushed = keys_in(redis)
    redis.rpush(keys.queue("bad", cls), b"not an entry")  # set aside when popped
    redis.zadd(keys.levels("bad"), {str(cls): cls})
    redis.zadd(keys.ready, {"bad": 0})
    assert store.pop(PopOrder(0, NODE, 0.0), T0) is not None
    shaped = {
        keys.queue("www.example.com", cls),
        keys.levels("www.example.com"),
        keys.provisional(3),
        keys.provisional_sequences(3),
        keys.bloom(0),
    }
    named = shaped | {getattr(keys, name) for name in SHARD_KEYS}
    assert shaped <= pushed
    assert pushed - named == {CrawlKeys("t").meta}
    assert keys_in(redis) - named == {CrawlKeys("t").meta, keys.damaged}
    assert redis.lrange(keys.damaged, 0, -1) == [b"not an entry"]


# A value for each field of a key shape, and the ARGV index the test script reads it at.
VALUES = {"level": 17, "depth": 5, "index": 3}
ARGV_OF = {"host": 2, "level": 3, "depth": 4, "index": 5}


@pytest.mark.parametrize("host", HOSTS)
def test_each_key_function_builds_the_key_models_name(
    redis: redis_py.Redis, host: str
) -> None:
    """The rendered Lua: fixed keys and every shape's function, for awkward hosts
    (braces, colons, not ASCII)."""
    keys = Keys("my-crawl.v2", 7)
    values: dict[str, object] = {"host": host, **VALUES}
    fixed = [getattr(keys, name) for name in SHARD_KEYS]
    built = [name.upper() for name in SHARD_KEYS]
    expected = list(fixed)
    for shape in KEY_SHAPES:
        arguments = ", ".join(f"ARGV[{ARGV_OF[field]}]" for field in shape.fields)
        built.append(f"{shape.name}_key({arguments})")
        member = getattr(keys, shape.name)
        fields = [values[field] for field in shape.fields]
        expected.append(member(*fields) if callable(member) else member)
    source = f"local tag = ARGV[1]\n{lua_keys()}return {{{', '.join(built)}}}"
    argv = [keys.tag, host, *(str(values[f]) for f in ("level", "depth", "index"))]
    reply = redis.eval(source, len(fixed), *fixed, *argv)  # type: ignore[no-untyped-call]
    assert [value.decode() for value in reply] == expected


@pytest.mark.parametrize("script", sorted(ScriptRunner.SOURCES))
def test_each_script_reads_the_arguments_its_signature_names(script: str) -> None:
    """Every named argument a script reads is one its callers must send, and every
    one they send is read; record fields likewise; no ARGV by position."""
    source, signature = ScriptRunner.SOURCES[script], SIGNATURES[script]
    assert "ARGV" not in source
    assert set(re.findall(r"\bargs\.(\w+)", source)) == set(signature.names)
    for record in re.findall(r"for (\w+) in records\(\)", source):
        read = set(re.findall(rf"\b{record}\.(\w+)", source))
        assert read == set(signature.record), record
    assert "records()" in source or not signature.record
    assert set(COMMON) == {"order", "now", "spill_head"}  # the helpers read these
    assert "ARGV" in script_source(script)  # the helpers decode ARGV[1]


def test_no_script_spells_a_key_by_hand() -> None:
    """Keys come from the rendered names only: no ``tag ..`` and no ``KEYS[n]``
    outside them, in the helpers or any script."""
    rendered = lua_keys()
    for script in ScriptRunner.SOURCES:
        source = script_source(script).replace(rendered, "")
        assert "tag .." not in source, script
        assert "KEYS[" not in source, script
