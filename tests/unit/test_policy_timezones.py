"""Unit tests for crawler/policy/timezones.py: which zone a host's clock follows.

``machine_zone()`` (crawler/context/hostdelays.py) is tested here too: it picks the zone of
every host the table cannot place.
"""

from __future__ import annotations

from collections import defaultdict
from importlib import resources
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.context.hostdelays import machine_zone
from crawler.policy.suffixes import normalize_host, suffixes_of
from crawler.policy.timezones import CCTLD_ZONES, ZoneResolver, is_known_zone
from tests.unit.properties import PROPERTY

if TYPE_CHECKING:
    from pathlib import Path

DEFAULT = "America/Chicago"  # in no ccTLD of the table, so a fallback is visible


def project_settings(**values: object) -> Settings:
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    settings.setdict(values, priority="cmdline")
    return settings


def resolver(**values: object) -> ZoneResolver:
    return ZoneResolver.from_settings(project_settings(**values), machine_zone=DEFAULT)


def single_zone_countries() -> dict[str, str]:
    """ccTLD -> zone of each country with exactly one row in tzdata's zone.tab."""
    rows: defaultdict[str, list[str]] = defaultdict(list)
    text = resources.files("tzdata.zoneinfo").joinpath("zone.tab").read_text()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            code, _, zone, *_ = line.split("\t")
            rows[code.lower()].append(zone)
    return {code: zones[0] for code, zones in rows.items() if len(zones) == 1}


# --- The ccTLD table ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tld", "zone"),
    [
        ("cn", "Asia/Shanghai"),
        ("de", "Europe/Berlin"),
        ("jp", "Asia/Tokyo"),
        ("fr", "Europe/Paris"),
        ("uk", "Europe/London"),
        ("gb", "Europe/London"),
        ("in", "Asia/Kolkata"),
        ("es", "Europe/Madrid"),
        ("pt", "Europe/Lisbon"),
        ("nz", "Pacific/Auckland"),
        ("cl", "America/Santiago"),
        ("ec", "America/Guayaquil"),
        ("ua", "Europe/Kyiv"),
        ("is", "Atlantic/Reykjavik"),
    ],
)
def test_cctld_table_spot_checks(tld: str, zone: str) -> None:
    assert CCTLD_ZONES[tld] == zone


@pytest.mark.parametrize(
    "tld", ["us", "ca", "ru", "au", "br", "mx", "id", "kz", "aq", "com", "eu"]
)
def test_countries_spread_over_zones_are_not_in_the_table(tld: str) -> None:
    assert tld not in CCTLD_ZONES


def test_every_single_zone_country_of_tzdata_is_in_the_table() -> None:
    expected = single_zone_countries()
    assert len(expected) > 200
    assert {code: CCTLD_ZONES.get(code) for code in expected} == expected


@pytest.mark.parametrize(("tld", "zone"), sorted(CCTLD_ZONES.items()))
def test_every_table_zone_loads(tld: str, zone: str) -> None:
    assert len(tld) == 2
    assert tld.isascii()
    assert tld.islower()
    assert ZoneInfo(zone).key == zone


# --- Suffixes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "suffixes"),
    [
        ("a.b.example.de", ["a.b.example.de", "b.example.de", "example.de", "de"]),
        ("WWW.Example.DE.", ["www.example.de", "example.de", "de"]),
        ("localhost", ["localhost"]),
        ("127.0.0.2", ["127.0.0.2"]),
        ("[::0001]", ["::1"]),
        ("", [""]),
    ],
)
def test_suffixes_of(host: str, suffixes: list[str]) -> None:
    assert suffixes_of(host) == suffixes


def test_a_hostile_long_host_costs_no_more_than_a_dns_name() -> None:
    suffixes = suffixes_of("x." * 100_000 + "de")
    assert len(suffixes) <= 127
    assert max(map(len, suffixes)) <= 253
    assert suffixes[-1] == "de"


@pytest.mark.parametrize(
    ("text", "normalized"),
    [(" .Example.COM. ", "example.com"), ("[::1]", "::1"), ("127.0.0.1", "127.0.0.1")],
)
def test_normalize_host(text: str, normalized: str) -> None:
    assert normalize_host(text) == normalized


# --- Resolving a host's zone ---------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "zone"),
    [
        ("www.example.cn", "Asia/Shanghai"),
        ("example.de", "Europe/Berlin"),
        ("EXAMPLE.DE.", "Europe/Berlin"),
        ("shop.example.co.jp", "Asia/Tokyo"),
        ("bbc.co.uk", "Europe/London"),
        ("whitehouse.us", DEFAULT),
        ("example.com", DEFAULT),
        ("localhost", DEFAULT),
        ("127.0.0.2", DEFAULT),
        ("10.0.0.1", DEFAULT),
        ("::1", DEFAULT),
        ("[2001:db8::1]", DEFAULT),
        ("", DEFAULT),
        ("de", "Europe/Berlin"),
    ],
)
def test_zone_from_the_cctld_table_else_the_default(host: str, zone: str) -> None:
    assert resolver().zone_name(host) == zone
    assert resolver().zone_of(host) == ZoneInfo(zone)


SPECIFIC = {"de": "Europe/Paris", "Example.DE.": "America/New_York", "com": "UTC"}


@pytest.mark.parametrize(
    ("host", "zone"),
    [
        ("example.de", "America/New_York"),
        ("www.example.de", "America/New_York"),
        ("WWW.EXAMPLE.DE.", "America/New_York"),
        ("notexample.de", "Europe/Paris"),
        ("other.de", "Europe/Paris"),
        ("example.com", "UTC"),
        ("example.jp", "Asia/Tokyo"),
        ("example.org", DEFAULT),
    ],
)
def test_most_specific_configured_suffix_wins(host: str, zone: str) -> None:
    assert resolver(POLITENESS_TIMEZONES=SPECIFIC).zone_name(host) == zone


def test_timezones_from_the_command_line_are_json() -> None:
    zones = resolver(POLITENESS_TIMEZONES='{"example.de": "America/New_York"}')
    assert zones.zone_name("www.example.de") == "America/New_York"
    assert zones.zone_name("other.de") == "Europe/Berlin"


def test_an_ip_host_matches_only_its_own_address() -> None:
    zones = resolver(POLITENESS_TIMEZONES={"127.0.0.2": "Asia/Tokyo", "0.3": "UTC"})
    assert zones.zone_name("127.0.0.2") == "Asia/Tokyo"
    assert zones.zone_name("127.0.0.3") == DEFAULT


@pytest.mark.parametrize(
    ("configured", "machine", "default"),
    [
        ("", "Asia/Tokyo", "Asia/Tokyo"),
        ("Europe/Berlin", "Asia/Tokyo", "Europe/Berlin"),
        (" Europe/Berlin ", "Asia/Tokyo", "Europe/Berlin"),
        (None, "UTC", "UTC"),
    ],
)
def test_default_zone_is_the_setting_else_the_machines(
    configured: str | None, machine: str, default: str
) -> None:
    settings = project_settings(POLITENESS_DEFAULT_TIMEZONE=configured)
    zones = ZoneResolver.from_settings(settings, machine_zone=machine)
    assert zones.default == default
    assert zones.zone_name("example.com") == default


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"POLITENESS_TIMEZONES": {"de": "Mars/Olympus"}}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": '{"de": "Europe/berlin"}'}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": {"de": 5}}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": {"de": "Europe"}}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": {"de": "../../etc/passwd"}}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": {"de": "zone.tab"}}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": "{not json"}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": '["de", "UTC"]'}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": '"Europe/Berlin"'}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": {"": "UTC"}}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": {"...": "UTC"}}, "POLITENESS_TIMEZONES"),
        ({"POLITENESS_TIMEZONES": {"DE": "UTC", "de.": "UTC"}}, "POLITENESS_TIMEZONES"),
        (
            {"POLITENESS_DEFAULT_TIMEZONE": "Nowhere/City"},
            "POLITENESS_DEFAULT_TIMEZONE",
        ),
        (
            {"POLITENESS_DEFAULT_TIMEZONE": "UTC,Asia/Tokyo"},
            "POLITENESS_DEFAULT_TIMEZONE",
        ),
    ],
)
def test_bad_zone_settings_name_the_setting_in_one_line(
    values: dict[str, object], named: str
) -> None:
    with pytest.raises(ValueError, match=f"^{named}") as info:
        resolver(**values)
    assert "\n" not in str(info.value)


def test_an_unknown_machine_zone_asks_for_the_setting() -> None:
    with pytest.raises(ValueError, match=r"^POLITENESS_DEFAULT_TIMEZONE is empty"):
        ZoneResolver.from_settings(project_settings(), machine_zone="Nowhere/City")


@pytest.mark.parametrize(
    ("name", "known"),
    [
        ("Europe/Berlin", True),
        ("UTC", True),
        ("Mars/Olympus", False),
        ("", False),
        ("/etc/localtime", False),
        ("Europe", False),
        ("iso3166.tab", False),
        ("Europe/Berlin\x00", False),
        ("x" * 1000, False),
    ],
)
def test_is_known_zone(name: str, known: bool) -> None:
    assert is_known_zone(name) is known


HOSTS = st.one_of(
    st.text(),
    st.text(alphabet=".-[]:%abcdejp0123456789ÄßİK\x00 ", max_size=40),
    st.ip_addresses().map(str),
    st.from_regex(r"[a-z0-9.-]{0,20}\.(de|jp|cn|us|com|uk)\.?", fullmatch=True),
)


@PROPERTY
@given(host=HOSTS)
def test_any_text_as_host_gets_a_known_zone(host: str) -> None:
    zones = resolver(POLITENESS_TIMEZONES=SPECIFIC)
    name = zones.zone_name(host)
    assert name in {DEFAULT, *SPECIFIC.values(), *CCTLD_ZONES.values()}
    assert zones.zone_of(host).key == name


@PROPERTY
@given(address=st.ip_addresses())
def test_every_ip_address_gets_the_default_zone(address: object) -> None:
    assert resolver().zone_name(str(address)) == DEFAULT


# --- machine_zone() (crawler/context/hostdelays.py) -------------------------------------------


def zoneinfo_link(tmp_path: Path, target: str) -> Path:
    """An /etc/localtime-like symlink in *tmp_path* pointing at *target*."""
    link = tmp_path / "etc" / "localtime"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


@pytest.mark.parametrize(
    ("tz", "zone"),
    [
        ("Europe/Berlin", "Europe/Berlin"),
        (":Asia/Tokyo", "Asia/Tokyo"),
        (" America/New_York ", "America/New_York"),
        ("/usr/share/zoneinfo/Asia/Tokyo", "Asia/Tokyo"),
        (":/usr/share/zoneinfo/posix/Europe/Paris", "Europe/Paris"),
        ("/usr/share/zoneinfo/right/Europe/Paris", "Europe/Paris"),
        ("posix/Asia/Tokyo", "Asia/Tokyo"),
        ("UTC", "UTC"),
        ("EST5EDT", "EST5EDT"),
        ("JST-9", "Etc/GMT-9"),
        ("EST5", "Etc/GMT+5"),
        ("UTC0", "UTC"),
    ],
)
def test_machine_zone_reads_tz(tmp_path: Path, tz: str, zone: str) -> None:
    link = zoneinfo_link(tmp_path, "/usr/share/zoneinfo/Europe/Lisbon")
    assert machine_zone(environ={"TZ": tz}, localtime=link) == zone


@pytest.mark.parametrize(
    "tz",
    ["", "garbage", "CET-1CEST,M3.5.0,M10.5.0/3", "../../etc/passwd", "Europe", ":"],
)
def test_a_tz_zoneinfo_cannot_load_falls_back_to_localtime(
    tmp_path: Path, tz: str
) -> None:
    link = zoneinfo_link(tmp_path, "/usr/share/zoneinfo/Europe/Lisbon")
    assert machine_zone(environ={"TZ": tz}, localtime=link) == "Europe/Lisbon"


@pytest.mark.parametrize(
    ("target", "zone"),
    [
        ("/usr/share/zoneinfo/Europe/Berlin", "Europe/Berlin"),
        ("../usr/share/zoneinfo/Asia/Tokyo", "Asia/Tokyo"),
        ("/usr/share/zoneinfo/posix/Asia/Tokyo", "Asia/Tokyo"),
        ("/usr/share/zoneinfo/right/America/Chicago", "America/Chicago"),
        ("/var/db/timezone/zoneinfo/America/Sao_Paulo", "America/Sao_Paulo"),
        ("/usr/share/zoneinfo/Etc/UTC", "Etc/UTC"),
        ("/usr/share/zoneinfo/Mars/Olympus", "UTC"),
        ("/nowhere/localtime", "UTC"),
    ],
)
def test_machine_zone_reads_the_localtime_symlink(
    tmp_path: Path, target: str, zone: str
) -> None:
    link = zoneinfo_link(tmp_path, target)
    missing = tmp_path / "no-timezone-file"
    found = machine_zone(environ={}, localtime=link, timezone_file=missing)
    assert found == zone


def test_machine_zone_follows_a_chain_of_links(tmp_path: Path) -> None:
    nix = tmp_path / "nix" / "store" / "tzdata" / "share" / "zoneinfo" / "Asia"
    nix.mkdir(parents=True)
    (nix / "Tokyo").write_bytes(b"TZif")
    hop = tmp_path / "hop"
    hop.symlink_to(nix / "Tokyo")
    link = zoneinfo_link(tmp_path, str(hop))
    assert machine_zone(environ={}, localtime=link) == "Asia/Tokyo"


def test_machine_zone_survives_a_loop_of_links(tmp_path: Path) -> None:
    link = zoneinfo_link(tmp_path, str(tmp_path / "etc" / "localtime"))
    missing = tmp_path / "no-timezone-file"
    assert machine_zone(environ={}, localtime=link, timezone_file=missing) == "UTC"


@pytest.mark.parametrize(
    ("content", "zone"),
    [
        ("Europe/Vienna\n", "Europe/Vienna"),
        ("  Asia/Tokyo  \nignored\n", "Asia/Tokyo"),
        ("Mars/Olympus\n", "UTC"),
        ("", "UTC"),
    ],
)
def test_machine_zone_reads_etc_timezone_when_localtime_is_a_copy(
    tmp_path: Path, content: str, zone: str
) -> None:
    copy = tmp_path / "localtime"
    copy.write_bytes(b"TZif2")
    timezone_file = tmp_path / "timezone"
    timezone_file.write_text(content, encoding="utf-8")
    found = machine_zone(environ={}, localtime=copy, timezone_file=timezone_file)
    assert found == zone


def test_machine_zone_is_utc_when_nothing_says_otherwise(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert machine_zone(environ={}, localtime=missing, timezone_file=missing) == "UTC"


def test_machine_zone_of_this_machine_loads() -> None:
    assert is_known_zone(machine_zone())
