"""Unit tests for crawler/policy/scope.py parse_seed_payload: seeds pushed to Redis,
plain URLs or scrapy-redis' JSON objects, and hostile payloads."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler import meta as crawler_meta
from crawler.policy.scope import (
    MAX_SEED_PAYLOAD,
    RESERVED_META,
    RESERVED_META_PREFIX,
    BadSeedError,
    SeedPayload,
    parse_seed_payload,
)
from tests.unit.properties import PROPERTY

URL = "http://127.0.0.2:8000/start"


@pytest.mark.parametrize(
    ("text", "seed"),
    [
        (URL, SeedPayload(URL)),
        (f"  {URL}\n", SeedPayload(URL)),
        ("", None),
        ("# a comment", None),
        (json.dumps({"url": URL}), SeedPayload(URL)),
        (
            json.dumps({"url": URL, "meta": {"job": "x1", "n": [1, 2.5, None]}}),
            SeedPayload(URL, meta={"job": "x1", "n": [1, 2.5, None]}),
        ),
        (json.dumps({"url": URL, "priority": -3}), SeedPayload(URL, priority=-3)),
        (json.dumps({"url": URL, "method": "post"}), SeedPayload(URL, method="POST")),
        (
            json.dumps({"url": URL, "method": "POST", "q": "crawler"}),
            SeedPayload(URL, method="POST", formdata={"q": "crawler"}),
        ),
        (json.dumps({"url": URL, "meta": {"~": 1}}), SeedPayload(URL, meta={"~": 1})),
    ],
)
def test_good_seed_payloads(text: str, seed: SeedPayload | None) -> None:
    assert parse_seed_payload(text) == seed


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("ftp://127.0.0.2/", "url"),
        ("not a url", "url"),
        ("{", "json"),
        ('{"url": "' + URL + '"} trailing', "json"),
        ('{"url": "' + URL + '", "meta": {"x": NaN}}', "json"),
        ('{"url": "' + URL + '", "priority": Infinity}', "json"),
        ("[" * 100_000, "url"),  # not an object: read as a URL line, and refused
        ("{" + '"a":' * 20_000 + "1" + "}" * 20_000, "too_large"),
        ('{"a":' * 10_000 + "1" + "}" * 10_000, "json"),  # nesting past the parser
        (json.dumps({"meta": {}}), "url"),
        (json.dumps({"url": 5}), "url"),
        (json.dumps({"url": ""}), "url"),
        (json.dumps({"url": "# " + URL}), "url"),
        (json.dumps({"url": "javascript:alert(1)"}), "url"),
        (json.dumps({"url": URL, "meta": []}), "meta"),
        (json.dumps({"url": URL, "meta": "x"}), "meta"),
        (json.dumps({"url": URL, "meta": {"depth": 3}}), "meta"),
        (json.dumps({"url": URL, "meta": {crawler_meta.LEASE: "0:1"}}), "meta"),
        (json.dumps({"url": URL, "priority": "1"}), "priority"),
        (json.dumps({"url": URL, "priority": True}), "priority"),
        (json.dumps({"url": URL, "priority": 1.5}), "priority"),
        (json.dumps({"url": URL, "priority": 2**40}), "priority"),
        (json.dumps({"url": URL, "method": "BREW"}), "method"),
        (json.dumps({"url": URL, "method": 1}), "method"),
        (json.dumps({"url": URL, "callback": None}), "form"),
        (json.dumps({"url": URL, "q": ["a"]}), "form"),
    ],
)
def test_bad_seed_payloads_are_refused_by_kind(text: str, kind: str) -> None:
    with pytest.raises(BadSeedError) as caught:
        parse_seed_payload(text)
    assert caught.value.kind == kind


def test_a_huge_integer_is_bad_json_not_a_crash() -> None:
    text = '{"url": "' + URL + '", "priority": ' + "9" * 5000 + "}"
    with pytest.raises(BadSeedError) as caught:
        parse_seed_payload(text)
    assert caught.value.kind == "json"


def test_the_payload_limit_counts_characters() -> None:
    padding = "x" * (MAX_SEED_PAYLOAD - len(json.dumps({"url": URL, "p": ""})))
    assert parse_seed_payload(json.dumps({"url": URL, "p": padding})) is not None
    with pytest.raises(BadSeedError):
        parse_seed_payload(json.dumps({"url": URL, "p": padding + "x"}))


def test_every_meta_key_of_the_crawler_is_reserved() -> None:
    """...but the keys a spider may set on its own requests (Scrapy's own among them)."""
    spider_set = {
        crawler_meta.DONT_OBEY_ROBOTSTXT,
        crawler_meta.DONT_RETRY_LATER,
        crawler_meta.RENDER,
        crawler_meta.RENDER_ACTION,
        crawler_meta.RENDER_KEEP_STATIC,
    }
    keys = [v for k, v in vars(crawler_meta).items() if k.isupper()]
    assert keys
    assert all(
        key.startswith(RESERVED_META_PREFIX)
        or key in RESERVED_META
        or key in spider_set
        for key in keys
    )


@PROPERTY
@given(
    st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1"))
)
def test_any_text_is_a_seed_none_or_a_bad_seed(text: str) -> None:
    kind = ""
    seed = None
    try:
        seed = parse_seed_payload(text)
    except BadSeedError as exc:
        kind = exc.kind
    assert kind in {
        "",
        "url",
        "json",
        "meta",
        "priority",
        "method",
        "form",
        "too_large",
    }
    assert seed is None or seed.url.lower().startswith(("http://", "https://"))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@PROPERTY
@given(
    meta=st.dictionaries(
        st.text(max_size=10).filter(
            lambda k: k not in RESERVED_META and not k.startswith(RESERVED_META_PREFIX)
        ),
        JSON_VALUES,
        max_size=5,
    ),
    priority=st.integers(-(2**31) + 1, 2**31 - 1),
    form=st.dictionaries(
        st.text(max_size=10).filter(
            lambda k: k not in {"url", "meta", "priority", "method"}
        ),
        st.text(max_size=10),
        max_size=3,
    ),
)
def test_a_scrapy_redis_payload_comes_back_whole(meta, priority, form) -> None:
    payload = {"url": URL, "meta": meta, "priority": priority, "method": "POST", **form}
    seed = parse_seed_payload(json.dumps(payload))
    assert seed == SeedPayload(URL, meta, priority, "POST", form)
