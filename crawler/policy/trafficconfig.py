"""The traffic counters' settings (``TRAFFIC_*``), checked once at start-up: how
long an idle host's counters live and how many hosts a ranking keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.typedsettings import get_float, get_int

if TYPE_CHECKING:
    from crawler.policy.typedsettings import SupportsGet


@dataclass(frozen=True, slots=True)
class TrafficConfig:
    idle_ttl: int  # seconds a host's counters outlive its last fetch
    rank_size: int  # hosts each ranking keeps (the top N)

    @classmethod
    def from_settings(cls, settings: SupportsGet) -> TrafficConfig:
        """The config; raises ``ValueError`` with one line naming the bad setting."""
        idle_ttl = get_float(settings, "TRAFFIC_IDLE_TTL", at_least=1, note="seconds")
        return cls(
            idle_ttl=max(1, round(idle_ttl)),  # EXPIRE takes whole seconds
            rank_size=get_int(settings, "TRAFFIC_RANK_SIZE", at_least=1),
        )
