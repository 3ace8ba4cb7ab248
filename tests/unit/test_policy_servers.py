"""Which server a host's politeness counts against (crawler.policy.servers)."""

from __future__ import annotations

import pytest

from crawler.policy.servers import politeness_key, server_of


def test_per_host_a_name_is_its_own_server():
    assert server_of("a.example.co.uk", "host", ["10.0.0.1"]) == "a.example.co.uk"


def test_per_ip_a_name_counts_against_the_address_tried_first():
    assert server_of("a.example.co.uk", "ip", ["10.0.0.1", "10.0.0.2"]) == "10.0.0.1"
    assert server_of("b.example.net", "ip", ["2001:db8::1"]) == "2001:db8::1"


def test_per_ip_a_name_without_addresses_is_its_own_server():
    assert server_of("missing.example", "ip", []) == "missing.example"


def test_per_domain_hosts_count_against_their_registered_domain():
    assert server_of("a.b.example.co.uk", "domain") == "example.co.uk"
    assert server_of("www.example.com", "domain") == server_of("example.com", "domain")
    assert server_of("127.0.0.2", "domain") == "127.0.0.2"


@pytest.mark.parametrize("value", ["host", "IP", " domain "])
def test_the_setting_is_read_in_any_case(value):
    assert politeness_key({"POLITENESS_KEY": value}) == value.strip().lower()


@pytest.mark.parametrize("value", ["isp", "", None, 1])
def test_a_bad_setting_names_the_choices(value):
    with pytest.raises(
        ValueError, match="POLITENESS_KEY must be one of host, ip, domain"
    ):
        politeness_key({"POLITENESS_KEY": value})
