"""Which time zone a host lives in: configured suffixes, then its country code.

The politeness policy needs the host's own wall clock to tell its day from its
night; a crawler in Berlin must not hammer a Tokyo site at Tokyo's noon because it
is night in Berlin. The zone comes from the most specific configured domain suffix,
else the host's country-code TLD, else a default zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from crawler.policy.suffixes import suffix_table, suffixes_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.settings import BaseSettings

# tzdata 2026f zone.tab: each country with one zone (or one clearly dominant); uk = GB.
# fmt: off
CCTLD_ZONES: dict[str, str] = {
    "ad": "Europe/Andorra", "ae": "Asia/Dubai", "af": "Asia/Kabul",
    "ag": "America/Antigua", "ai": "America/Anguilla", "al": "Europe/Tirane",
    "am": "Asia/Yerevan", "ao": "Africa/Luanda", "ar": "America/Argentina/Buenos_Aires",
    "as": "Pacific/Pago_Pago", "at": "Europe/Vienna", "aw": "America/Aruba",
    "ax": "Europe/Mariehamn", "az": "Asia/Baku", "ba": "Europe/Sarajevo",
    "bb": "America/Barbados", "bd": "Asia/Dhaka", "be": "Europe/Brussels",
    "bf": "Africa/Ouagadougou", "bg": "Europe/Sofia", "bh": "Asia/Bahrain",
    "bi": "Africa/Bujumbura", "bj": "Africa/Porto-Novo", "bl": "America/St_Barthelemy",
    "bm": "Atlantic/Bermuda", "bn": "Asia/Brunei", "bo": "America/La_Paz",
    "bq": "America/Kralendijk", "bs": "America/Nassau", "bt": "Asia/Thimphu",
    "bw": "Africa/Gaborone", "by": "Europe/Minsk", "bz": "America/Belize",
    "cc": "Indian/Cocos", "cf": "Africa/Bangui", "cg": "Africa/Brazzaville",
    "ch": "Europe/Zurich", "ci": "Africa/Abidjan", "ck": "Pacific/Rarotonga",
    "cl": "America/Santiago", "cm": "Africa/Douala", "cn": "Asia/Shanghai",
    "co": "America/Bogota", "cr": "America/Costa_Rica", "cu": "America/Havana",
    "cv": "Atlantic/Cape_Verde", "cw": "America/Curacao", "cx": "Indian/Christmas",
    "cy": "Asia/Nicosia", "cz": "Europe/Prague", "de": "Europe/Berlin",
    "dj": "Africa/Djibouti", "dk": "Europe/Copenhagen", "dm": "America/Dominica",
    "do": "America/Santo_Domingo", "dz": "Africa/Algiers", "ec": "America/Guayaquil",
    "ee": "Europe/Tallinn", "eg": "Africa/Cairo", "eh": "Africa/El_Aaiun",
    "er": "Africa/Asmara", "es": "Europe/Madrid", "et": "Africa/Addis_Ababa",
    "fi": "Europe/Helsinki", "fj": "Pacific/Fiji", "fk": "Atlantic/Stanley",
    "fo": "Atlantic/Faroe", "fr": "Europe/Paris", "ga": "Africa/Libreville",
    "gb": "Europe/London", "gd": "America/Grenada", "ge": "Asia/Tbilisi",
    "gf": "America/Cayenne", "gg": "Europe/Guernsey", "gh": "Africa/Accra",
    "gi": "Europe/Gibraltar", "gl": "America/Nuuk", "gm": "Africa/Banjul",
    "gn": "Africa/Conakry", "gp": "America/Guadeloupe", "gq": "Africa/Malabo",
    "gr": "Europe/Athens", "gs": "Atlantic/South_Georgia", "gt": "America/Guatemala",
    "gu": "Pacific/Guam", "gw": "Africa/Bissau", "gy": "America/Guyana",
    "hk": "Asia/Hong_Kong", "hn": "America/Tegucigalpa", "hr": "Europe/Zagreb",
    "ht": "America/Port-au-Prince", "hu": "Europe/Budapest", "ie": "Europe/Dublin",
    "il": "Asia/Jerusalem", "im": "Europe/Isle_of_Man", "in": "Asia/Kolkata",
    "io": "Indian/Chagos", "iq": "Asia/Baghdad", "ir": "Asia/Tehran",
    "is": "Atlantic/Reykjavik", "it": "Europe/Rome", "je": "Europe/Jersey",
    "jm": "America/Jamaica", "jo": "Asia/Amman", "jp": "Asia/Tokyo",
    "ke": "Africa/Nairobi", "kg": "Asia/Bishkek", "kh": "Asia/Phnom_Penh",
    "km": "Indian/Comoro", "kn": "America/St_Kitts", "kp": "Asia/Pyongyang",
    "kr": "Asia/Seoul", "kw": "Asia/Kuwait", "ky": "America/Cayman",
    "la": "Asia/Vientiane", "lb": "Asia/Beirut", "lc": "America/St_Lucia",
    "li": "Europe/Vaduz", "lk": "Asia/Colombo", "lr": "Africa/Monrovia",
    "ls": "Africa/Maseru", "lt": "Europe/Vilnius", "lu": "Europe/Luxembourg",
    "lv": "Europe/Riga", "ly": "Africa/Tripoli", "ma": "Africa/Casablanca",
    "mc": "Europe/Monaco", "md": "Europe/Chisinau", "me": "Europe/Podgorica",
    "mf": "America/Marigot", "mg": "Indian/Antananarivo", "mh": "Pacific/Majuro",
    "mk": "Europe/Skopje", "ml": "Africa/Bamako", "mm": "Asia/Yangon",
    "mn": "Asia/Ulaanbaatar", "mo": "Asia/Macau", "mp": "Pacific/Saipan",
    "mq": "America/Martinique", "mr": "Africa/Nouakchott", "ms": "America/Montserrat",
    "mt": "Europe/Malta", "mu": "Indian/Mauritius", "mv": "Indian/Maldives",
    "mw": "Africa/Blantyre", "my": "Asia/Kuala_Lumpur", "mz": "Africa/Maputo",
    "na": "Africa/Windhoek", "nc": "Pacific/Noumea", "ne": "Africa/Niamey",
    "nf": "Pacific/Norfolk", "ng": "Africa/Lagos", "ni": "America/Managua",
    "nl": "Europe/Amsterdam", "no": "Europe/Oslo", "np": "Asia/Kathmandu",
    "nr": "Pacific/Nauru", "nu": "Pacific/Niue", "nz": "Pacific/Auckland",
    "om": "Asia/Muscat", "pa": "America/Panama", "pe": "America/Lima",
    "pf": "Pacific/Tahiti", "pg": "Pacific/Port_Moresby", "ph": "Asia/Manila",
    "pk": "Asia/Karachi", "pl": "Europe/Warsaw", "pm": "America/Miquelon",
    "pn": "Pacific/Pitcairn", "pr": "America/Puerto_Rico", "ps": "Asia/Hebron",
    "pt": "Europe/Lisbon", "pw": "Pacific/Palau", "py": "America/Asuncion",
    "qa": "Asia/Qatar", "re": "Indian/Reunion", "ro": "Europe/Bucharest",
    "rs": "Europe/Belgrade", "rw": "Africa/Kigali", "sa": "Asia/Riyadh",
    "sb": "Pacific/Guadalcanal", "sc": "Indian/Mahe", "sd": "Africa/Khartoum",
    "se": "Europe/Stockholm", "sg": "Asia/Singapore", "sh": "Atlantic/St_Helena",
    "si": "Europe/Ljubljana", "sj": "Arctic/Longyearbyen", "sk": "Europe/Bratislava",
    "sl": "Africa/Freetown", "sm": "Europe/San_Marino", "sn": "Africa/Dakar",
    "so": "Africa/Mogadishu", "sr": "America/Paramaribo", "ss": "Africa/Juba",
    "st": "Africa/Sao_Tome", "sv": "America/El_Salvador", "sx": "America/Lower_Princes",
    "sy": "Asia/Damascus", "sz": "Africa/Mbabane", "tc": "America/Grand_Turk",
    "td": "Africa/Ndjamena", "tf": "Indian/Kerguelen", "tg": "Africa/Lome",
    "th": "Asia/Bangkok", "tj": "Asia/Dushanbe", "tk": "Pacific/Fakaofo",
    "tl": "Asia/Dili", "tm": "Asia/Ashgabat", "tn": "Africa/Tunis",
    "to": "Pacific/Tongatapu", "tr": "Europe/Istanbul", "tt": "America/Port_of_Spain",
    "tv": "Pacific/Funafuti", "tw": "Asia/Taipei", "tz": "Africa/Dar_es_Salaam",
    "ua": "Europe/Kyiv", "ug": "Africa/Kampala", "uk": "Europe/London",
    "uy": "America/Montevideo", "uz": "Asia/Tashkent", "va": "Europe/Vatican",
    "vc": "America/St_Vincent", "ve": "America/Caracas", "vg": "America/Tortola",
    "vi": "America/St_Thomas", "vn": "Asia/Ho_Chi_Minh", "vu": "Pacific/Efate",
    "wf": "Pacific/Wallis", "ws": "Pacific/Apia", "ye": "Asia/Aden",
    "yt": "Indian/Mayotte", "za": "Africa/Johannesburg", "zm": "Africa/Lusaka",
    "zw": "Africa/Harare",
}
# fmt: on


def is_known_zone(name: str) -> bool:
    """Whether ``zoneinfo`` can load *name* here: checked once, at start-up.

    ``ZoneInfo`` fails in many ways on a bad key (``KeyError`` for an unknown name,
    ``ValueError`` for a path or a non-TZif file, ``OSError`` for a directory), and
    callers only need to know whether the name is usable.
    """
    try:
        _cached_zone(name)
    except (ZoneInfoNotFoundError, ValueError, OSError, TypeError):
        return False
    return True


def load_zone(name: object, setting: str) -> ZoneInfo:
    """The zone *name*; else a one-line ``ValueError`` naming *setting*."""
    if isinstance(name, str) and is_known_zone(name):
        return _cached_zone(name)
    raise ValueError(f"{setting} names an unknown IANA time zone: {name!r}")


@dataclass(frozen=True, slots=True)
class ZoneResolver:
    """Most specific configured suffix, else the ccTLD table, else the default."""

    suffixes: Mapping[str, str]
    default: str

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, *, machine_zone: str
    ) -> ZoneResolver:
        """The resolver; an unknown zone name stops start-up, not the crawl."""
        suffixes: dict[str, str] = {}
        for suffix, zone in suffix_table(settings, "POLITENESS_TIMEZONES").items():
            load_zone(zone, f"POLITENESS_TIMEZONES[{suffix!r}]")
            suffixes[suffix] = str(zone)
        default = str(settings.get("POLITENESS_DEFAULT_TIMEZONE") or "").strip()
        if default:
            load_zone(default, "POLITENESS_DEFAULT_TIMEZONE")
        elif not is_known_zone(machine_zone):
            raise ValueError(
                "POLITENESS_DEFAULT_TIMEZONE is empty and this machine's zone "
                f"{machine_zone!r} is not a known IANA zone: set it"
            )
        return cls(suffixes, default or machine_zone)

    def zone_name(self, host: str) -> str:
        """The IANA zone name of *host*; any text is a host, none raises."""
        suffixes = suffixes_of(host)
        for suffix in suffixes:
            if (name := self.suffixes.get(suffix)) is not None:
                return name
        return CCTLD_ZONES.get(suffixes[-1], self.default)

    def zone_of(self, host: str) -> ZoneInfo:
        """The zone of *host*, loaded once per name."""
        return _cached_zone(self.zone_name(host))


@lru_cache(maxsize=512)
def _cached_zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)
