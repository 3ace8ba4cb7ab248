"""crawler/policy/dnsanswers.py: DNS settings, TTL clamping, which names go to DNS,
the shared entry's form, and hostile input (answers, Redis entries, system files)."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler import defaults
from crawler.policy.dnsanswers import (
    MAX_ADDRESSES,
    Answer,
    BadEntryError,
    DnsConfig,
    answer_of,
    clamp_ttl,
    decode_entry,
    dns_name,
    encode_entry,
    hosts_table,
    ip_literal,
    nameservers_of,
    parse_servers,
    try_timeouts,
)

CONFIG = DnsConfig(
    servers=(),
    min_ttl=30.0,
    max_ttl=600.0,
    negative_ttl=10.0,
    concurrency=4,
    timeout=5.0,
    local_size=3,
)


def settings(**overrides: object) -> dict[str, object]:
    values: dict[str, object] = {
        "DNS_SERVERS": defaults.DNS_SERVERS,
        "DNS_MIN_TTL": defaults.DNS_MIN_TTL,
        "DNS_MAX_TTL": defaults.DNS_MAX_TTL,
        "DNS_NEGATIVE_TTL": defaults.DNS_NEGATIVE_TTL,
        "DNS_CONCURRENCY": defaults.DNS_CONCURRENCY,
        "DNS_RESOLVE_AHEAD": defaults.DNS_RESOLVE_AHEAD,
        "DNS_TIMEOUT": 60,  # Scrapy's default
        "DNSCACHE_SIZE": 10000,  # Scrapy's default
    }
    values.update(overrides)
    return values


def test_the_defaults_make_a_config() -> None:
    config = DnsConfig.from_settings(settings())
    assert config.servers == ()
    assert (config.min_ttl, config.max_ttl, config.negative_ttl) == (60, 3600, 60)
    assert config.concurrency == 32
    assert config.timeout == 60
    assert config.resolve_ahead == 10


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"DNS_MIN_TTL": -1}, "DNS_MIN_TTL must be >= 0 seconds, got -1.0"),
        (
            {"DNS_RESOLVE_AHEAD": -5},
            "DNS_RESOLVE_AHEAD must be >= 0 seconds, got -5.0",
        ),
        ({"DNS_MAX_TTL": "soon"}, "DNS_MAX_TTL must be a number, got 'soon'"),
        (
            {"DNS_MIN_TTL": 100, "DNS_MAX_TTL": 50},
            "DNS_MAX_TTL must be at least DNS_MIN_TTL (100), got 50",
        ),
        ({"DNS_NEGATIVE_TTL": "nan"}, "DNS_NEGATIVE_TTL must be a finite number"),
        ({"DNS_CONCURRENCY": 0}, "DNS_CONCURRENCY must be >= 1, got 0"),
        ({"DNS_TIMEOUT": 0}, "DNS_TIMEOUT must be > 0 seconds, got 0.0"),
        ({"DNS_SERVERS": "dns.example"}, "DNS_SERVERS must list IP addresses"),
        ({"DNS_SERVERS": "127.0.0.1:99999"}, "DNS_SERVERS: bad port"),
        ({"DNS_SERVERS": "[1,"}, "DNS_SERVERS is not a JSON list"),
        ({"DNS_SERVERS": 53}, "DNS_SERVERS must be a list of addresses, got 53"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)) as info:
        DnsConfig.from_settings(settings(**overrides))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "servers"),
    [
        ("", ()),
        (None, ()),
        ([], ()),
        ("127.0.0.1", (("127.0.0.1", 53),)),
        ("127.0.0.1:5353, 10.0.0.1", (("127.0.0.1", 5353), ("10.0.0.1", 53))),
        ('["127.0.0.1:5300"]', (("127.0.0.1", 5300),)),
        (["::1"], (("::1", 53),)),
        (["[::1]:5353"], (("::1", 5353),)),
    ],
)
def test_servers_are_addresses_with_an_optional_port(
    value: object, servers: tuple[tuple[str, int], ...]
) -> None:
    assert parse_servers(value) == servers


@pytest.mark.parametrize(
    ("ttl", "kept"),
    [(0, 30), (29.9, 30), (30, 30), (300, 300), (600, 600), (86400, 600), (-5, 30)],
)
def test_a_ttl_is_clamped_to_the_min_and_max(ttl: float, kept: float) -> None:
    assert clamp_ttl(CONFIG, ttl) == kept


def test_a_ttl_that_is_no_number_counts_as_the_min() -> None:
    assert clamp_ttl(CONFIG, math.nan) == 30


def test_an_answer_is_kept_for_its_shortest_ttl() -> None:
    answer = answer_of(CONFIG, ["10.0.0.1", "10.0.0.2"], [300, 120, 400], now=1000)
    assert answer == Answer(("10.0.0.1", "10.0.0.2"), 1120)
    assert not answer.negative
    assert answer.fresh(1119.9)
    assert not answer.fresh(1120)


def test_an_answer_without_addresses_is_negative_for_the_negative_ttl() -> None:
    answer = answer_of(CONFIG, [], [300], now=1000)
    assert answer.negative
    assert answer.expires == 1010


def test_hostile_addresses_are_dropped_and_repeats_kept_once() -> None:
    addresses = ["10.0.0.1", "not an address", "10.0.0.1", "999.1.1.1", "10.0.0.2"]
    answer = answer_of(CONFIG, addresses, [60], now=0)
    assert answer.addresses == ("10.0.0.1", "10.0.0.2")


def test_an_answer_keeps_at_most_max_addresses() -> None:
    addresses = [f"10.0.{i // 256}.{i % 256}" for i in range(1000)]
    assert len(answer_of(CONFIG, addresses, [60], now=0).addresses) == MAX_ADDRESSES


@pytest.mark.parametrize(
    ("host", "literal"),
    [
        ("127.0.0.2", "127.0.0.2"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("a.crawl.test", None),
        ("localhost", None),
        ("127.0.0", None),
    ],
)
def test_ip_literals_never_go_to_dns(host: str, literal: str | None) -> None:
    assert ip_literal(host) == literal


@pytest.mark.parametrize(
    ("host", "name"),
    [
        ("A.Crawl.Test", "a.crawl.test"),
        ("a.crawl.test.", "a.crawl.test"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("_dmarc.example", "_dmarc.example"),
        ("", None),
        ("a..b", None),
        ("-a.example", None),
        ("a b.example", None),
        ("a" * 64 + ".example", None),
        (".".join(["a" * 60] * 5), None),  # 304 characters
        ("bücher.example", None),  # not IDNA-encoded
    ],
)
def test_only_well_formed_names_are_asked(host: str, name: str | None) -> None:
    assert dns_name(host) == name


def test_the_try_timeouts_add_up_to_the_timeout() -> None:
    assert try_timeouts(60) == (1, 3, 9, 27, 20)
    assert try_timeouts(0.5) == (0.5,)
    assert sum(try_timeouts(7.3)) == pytest.approx(7.3)


def test_an_entry_round_trips() -> None:
    for answer in (Answer(("10.0.0.1", "::1"), 1234.5), Answer((), 99.0)):
        assert decode_entry(encode_entry(answer)) == answer


@pytest.mark.parametrize(
    "data",
    [
        b"\x80\x04pickle",
        b"[]",
        b'{"v": 2, "a": [], "x": 1}',
        b'{"v": 1, "a": "10.0.0.1", "x": 1}',
        b'{"v": 1, "a": ["example.com"], "x": 1}',
        b'{"v": 1, "a": [1], "x": 1}',
        b'{"v": 1, "a": [], "x": "soon"}',
        b'{"v": 1, "a": [], "x": true}',
        b'{"v": 1, "a": [], "x": NaN}',
        json.dumps({"v": 1, "a": ["10.0.0.1"] * 17, "x": 1}).encode(),
    ],
)
def test_an_entry_the_crawler_did_not_write_is_refused(data: bytes) -> None:
    with pytest.raises(BadEntryError):
        decode_entry(data)


@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_decode_to_an_answer_or_a_bad_entry(data: bytes) -> None:
    try:
        answer = decode_entry(data)
    except BadEntryError:
        return
    assert all(ip_literal(address) == address for address in answer.addresses)


def test_nameservers_are_read_off_resolv_conf() -> None:
    text = (
        "# comment\nsearch example\nnameserver 10.0.0.53\nnameserver fe80::1%eth0\n"
        "nameserver not-an-address\nnameserver\nnameserver 1.1.1.1 # cloud\n"
    )
    assert nameservers_of(text) == (("10.0.0.53", 53), ("fe80::1", 53), ("1.1.1.1", 53))


def test_names_are_read_off_a_hosts_file() -> None:
    text = (
        "127.0.0.1 localhost Box.Local\n::1 localhost ip6-localhost\n"
        "# 10.0.0.1 commented\nbogus line\n10.0.0.300 bad\n10.0.0.2 ok # here\n"
    )
    assert hosts_table(text) == {
        "localhost": ("127.0.0.1", "::1"),
        "box.local": ("127.0.0.1",),
        "ip6-localhost": ("::1",),
        "ok": ("10.0.0.2",),
    }


@given(st.text(max_size=500))
def test_hostile_system_files_never_crash(text: str) -> None:
    for address, port in nameservers_of(text):
        assert ip_literal(address) == address
        assert port == 53
    for name, addresses in hosts_table(text).items():
        assert dns_name(name) == name
        assert addresses
