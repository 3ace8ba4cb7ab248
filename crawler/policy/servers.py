"""Which server a host's politeness is counted against (``POLITENESS_KEY``).

Politeness is per host name by default. Virtual hosting puts many names on one
machine (the design this crawler follows gives its own example: many domains
served by one address), and per name they would get the intended rate each, so
``POLITENESS_KEY = ip`` counts every name against the address it resolves to, and
``domain`` against its registered domain (``a.example.com`` and ``b.example.com``
together). Across the cluster a server has one gate
(``crawler.frontier.servergates``): one request in flight, and its delay between
two. robots.txt stays per origin whatever the key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from crawler.policy.hosts import registered_domain
from crawler.policy.typedsettings import get_choice

if TYPE_CHECKING:
    from collections.abc import Sequence

    from crawler.policy.typedsettings import SupportsGet

PolitenessKey = Literal["host", "ip", "domain"]
POLITENESS_KEYS: tuple[PolitenessKey, ...] = ("host", "ip", "domain")


def politeness_key(settings: SupportsGet) -> PolitenessKey:
    """``POLITENESS_KEY``, checked (any case)."""
    return get_choice(settings, "POLITENESS_KEY", POLITENESS_KEYS, fold_case=True)


def server_of(host: str, key: PolitenessKey, addresses: Sequence[str] = ()) -> str:
    """The server *host* is counted against: with ``ip``, the first of its
    *addresses* (the one a connection tries first), or the name itself when it has
    none (its fetch then fails as it would anyway); with ``domain``, its registered
    domain; with ``host``, itself."""
    if key == "ip":
        return addresses[0] if addresses else host
    if key == "domain":
        return registered_domain(host)
    return host
