"""DNS answers the crawl shares: its settings, how long an answer is kept, which
names go to DNS at all, and an answer's form in Redis.

Pure: no I/O, no clock (``now`` is an argument). ``crawler/dns`` asks the servers
and keeps the answers; this module decides what an answer means and how long it
holds, and reads back what Redis gives without trusting it.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.typedsettings import get_float, get_int

if TYPE_CHECKING:
    from crawler.policy.typedsettings import SupportsGet

# The form of a shared answer in Redis (``{"v": 1, "a": [...], "x": expiry}``).
ENTRY_VERSION = 1
# More addresses than this in one answer are cut: a host needs a few to connect.
MAX_ADDRESSES = 16
# The port of a DNS server named without one.
DNS_PORT = 53
# RFC 1035: a name is at most 253 characters as text, each label 1 to 63 of
# letters, digits, hyphens (underscores seen in the wild are let through).
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
MAX_NAME = 253
# The first try of a lookup waits this long before asking again (a lost UDP
# datagram), each later one three times longer, within DNS_TIMEOUT in all.
FIRST_TRY = 1.0


class BadEntryError(ValueError):
    """A shared answer the crawler did not write."""


@dataclass(frozen=True, slots=True)
class DnsConfig:
    """The DNS_* settings (and Scrapy's DNS_TIMEOUT and DNSCACHE_SIZE), checked
    once."""

    servers: tuple[tuple[str, int], ...]  # empty: the system's (/etc/resolv.conf)
    min_ttl: float
    max_ttl: float
    negative_ttl: float
    concurrency: int
    timeout: float
    local_size: int  # answers kept in this process' memory
    resolve_ahead: float = 0.0  # seconds: names due within are resolved before

    @classmethod
    def from_settings(cls, settings: SupportsGet) -> DnsConfig:
        """Raises ``ValueError`` (one line naming the setting) on a bad value."""
        min_ttl = get_float(settings, "DNS_MIN_TTL", at_least=0, note="seconds")
        max_ttl = get_float(settings, "DNS_MAX_TTL", at_least=0, note="seconds")
        if max_ttl < min_ttl:
            raise ValueError(
                f"DNS_MAX_TTL must be at least DNS_MIN_TTL ({min_ttl:g}), "
                f"got {max_ttl:g}"
            )
        return cls(
            servers=parse_servers(settings.get("DNS_SERVERS")),
            min_ttl=min_ttl,
            max_ttl=max_ttl,
            negative_ttl=get_float(
                settings, "DNS_NEGATIVE_TTL", at_least=0, note="seconds"
            ),
            concurrency=get_int(settings, "DNS_CONCURRENCY", at_least=1),
            timeout=get_float(settings, "DNS_TIMEOUT", above=0, note="seconds"),
            local_size=get_int(settings, "DNSCACHE_SIZE", at_least=1),
            resolve_ahead=get_float(
                settings, "DNS_RESOLVE_AHEAD", at_least=0, note="seconds"
            ),
        )


@dataclass(frozen=True, slots=True)
class Answer:
    """What DNS said of a name, until when (seconds since the epoch). No
    addresses: the name does not exist or has no address (a negative answer)."""

    addresses: tuple[str, ...]
    expires: float

    @property
    def negative(self) -> bool:
        return not self.addresses

    def fresh(self, now: float) -> bool:
        return now < self.expires


def parse_servers(value: object) -> tuple[tuple[str, int], ...]:
    """DNS_SERVERS as (address, port) pairs: a list, a JSON list or a
    comma-separated string of ``ADDRESS`` or ``ADDRESS:PORT`` (``[V6]:PORT``).
    Empty or unset: none (the system's). ``ValueError`` names the bad item."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except (ValueError, RecursionError) as exc:
                raise ValueError(f"DNS_SERVERS is not a JSON list: {exc}") from None
        else:
            value = text.split(",")
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise ValueError(  # noqa: TRY004 (a bad setting, like every other)
            f"DNS_SERVERS must be a list of addresses, got {value!r}"
        )
    return tuple(_server(item) for item in value if str(item).strip())


def _server(item: object) -> tuple[str, int]:
    text = str(item).strip()
    host, port = text, DNS_PORT
    if text.startswith("[") and "]" in text:  # [::1]:5353
        host, _, rest = text[1:].partition("]")
        port = _port(rest.removeprefix(":"), text) if rest else DNS_PORT
    elif text.count(":") == 1:  # 127.0.0.1:5353
        host, _, rest = text.partition(":")
        port = _port(rest, text)
    if ip_literal(host) is None:
        raise ValueError(
            f"DNS_SERVERS must list IP addresses (ADDRESS or ADDRESS:PORT), got {text!r}"
        )
    return host, port


def _port(text: str, item: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"DNS_SERVERS: bad port in {item!r}")
    return int(text)


def ip_literal(host: str) -> str | None:
    """*host* as an address if it is one (``127.0.0.2``, ``::1``, ``[::1]``): such
    a host never goes to DNS. None for a name."""
    text = host.strip().removeprefix("[").removesuffix("]")
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def dns_name(host: str) -> str | None:
    """*host* as the name asked of DNS (lowercase, no final dot), or None when it
    cannot be one (too long, an empty or malformed label): such a host is not
    looked up, and its fetch fails as a DNS failure."""
    name = host.strip().lower().removesuffix(".")
    if not name or len(name) > MAX_NAME:
        return None
    if not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return None
    return name


def clamp_ttl(config: DnsConfig, ttl: float) -> float:
    """The seconds an answer of TTL *ttl* is kept: within [DNS_MIN_TTL,
    DNS_MAX_TTL]; a TTL that is no number (NaN) counts as DNS_MIN_TTL."""
    if math.isnan(ttl):
        return config.min_ttl
    return min(max(ttl, config.min_ttl), config.max_ttl)


def answer_of(
    config: DnsConfig, addresses: list[str], ttls: list[float], *, now: float
) -> Answer:
    """The answer to keep from a server's reply: its valid addresses (in order,
    once each, at most MAX_ADDRESSES), kept for the shortest TTL of its records,
    clamped; no address is a negative answer, kept DNS_NEGATIVE_TTL."""
    found: list[str] = []
    for address in addresses:
        literal = ip_literal(address)
        if literal is not None and literal not in found:
            found.append(literal)
    if not found:
        return negative_answer(config, now=now)
    ttl = clamp_ttl(config, min(ttls) if ttls else config.min_ttl)
    return Answer(tuple(found[:MAX_ADDRESSES]), now + ttl)


def negative_answer(config: DnsConfig, *, now: float) -> Answer:
    """No such name, or no address: kept DNS_NEGATIVE_TTL."""
    return Answer((), now + config.negative_ttl)


def try_timeouts(total: float) -> tuple[float, ...]:
    """The wait of each try of one lookup: FIRST_TRY, then three times longer each,
    the last cut so that they add up to *total* (DNS_TIMEOUT)."""
    tries: list[float] = []
    wait, left = min(FIRST_TRY, total), total
    while left > 1e-9:
        step = min(wait, left)
        tries.append(step)
        left -= step
        wait *= 3
    return tuple(tries)


def encode_entry(answer: Answer) -> str:
    """*answer* as the JSON kept in Redis."""
    return json.dumps(
        {"v": ENTRY_VERSION, "a": list(answer.addresses), "x": answer.expires},
        separators=(",", ":"),
    )


def decode_entry(data: bytes | str) -> Answer:
    """The answer kept in Redis; ``BadEntryError`` for anything this module did
    not write (not JSON, another version, a field of the wrong kind, an address
    that is not one, too many addresses)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise BadEntryError("not JSON") from None
    if not isinstance(value, dict) or value.get("v") != ENTRY_VERSION:
        raise BadEntryError("not a version-1 DNS entry")
    addresses, expires = value.get("a"), value.get("x")
    if not isinstance(addresses, list) or len(addresses) > MAX_ADDRESSES:
        raise BadEntryError("bad address list")
    if not all(isinstance(a, str) and ip_literal(a) == a for a in addresses):
        raise BadEntryError("an address that is not one")
    if isinstance(expires, bool) or not isinstance(expires, int | float):
        raise BadEntryError("bad expiry")
    if not math.isfinite(expires):
        raise BadEntryError("bad expiry")
    return Answer(tuple(addresses), float(expires))


def nameservers_of(resolv_conf: str) -> tuple[tuple[str, int], ...]:
    """The servers of a resolv.conf text (its ``nameserver ADDRESS`` lines, in
    order); any other or malformed line is skipped."""
    servers: list[tuple[str, int]] = []
    for line in resolv_conf.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) == 2 and words[0] == "nameserver":
            address = ip_literal(words[1].split("%", 1)[0])
            if address is not None:
                servers.append((address, DNS_PORT))
    return tuple(servers)


def hosts_table(hosts_file: str) -> dict[str, tuple[str, ...]]:
    """Name -> addresses of an /etc/hosts text (``ADDRESS NAME [ALIAS...]``), the
    names as ``dns_name`` gives them; malformed lines are skipped."""
    table: dict[str, list[str]] = {}
    for line in hosts_file.splitlines():
        words = line.split("#", 1)[0].split()
        address = ip_literal(words[0]) if len(words) >= 2 else None
        if address is None:
            continue
        for word in words[1:]:
            name = dns_name(word)
            if name is not None and address not in table.setdefault(name, []):
                table[name].append(address)
    return {name: tuple(found[:MAX_ADDRESSES]) for name, found in table.items()}
