"""Which time zone a host lives in: configured suffixes, then its country code."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.settings import BaseSettings

# Country-code TLD -> its one main IANA zone (countries spanning zones are left out).
CCTLD_ZONES: dict[str, str] = {
    "cn": "Asia/Shanghai",
    "de": "Europe/Berlin",
    "fr": "Europe/Paris",
    "jp": "Asia/Tokyo",
    "uk": "Europe/London",
}


def _zone(name: str, setting: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"{setting} names an unknown IANA time zone: {name!r}"
        ) from None


@dataclass(frozen=True)
class ZoneResolver:
    """Most specific configured suffix, else the ccTLD table, else the default."""

    suffixes: Mapping[str, str]
    default: str

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, *, machine_zone: str
    ) -> ZoneResolver:
        suffixes = {
            str(k).lower().strip("."): str(v)
            for k, v in settings.getdict("POLITENESS_TIMEZONES").items()
        }
        for name in suffixes.values():
            _zone(name, "POLITENESS_TIMEZONES")
        default = settings.get("POLITENESS_DEFAULT_TIMEZONE") or machine_zone
        _zone(default, "POLITENESS_DEFAULT_TIMEZONE")
        return cls(suffixes, default)

    def zone_name(self, host: str) -> str:
        labels = host.lower().rstrip(".").split(".")
        for i in range(len(labels)):
            if (name := self.suffixes.get(".".join(labels[i:]))) is not None:
                return name
        return CCTLD_ZONES.get(labels[-1], self.default)

    def zone_of(self, host: str) -> ZoneInfo:
        return _cached_zone(self.zone_name(host))


@lru_cache(maxsize=512)
def _cached_zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)
