"""``ANALYSIS_*`` settings, read once into a frozen config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True, slots=True)
class AnalysisConfig:
    default_analyzer: str
    max_attempts: int
    claim_timeout: float
    alert_url: str
    stream_maxlen: int
    store_dir: Path

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> AnalysisConfig:
        store_dir = settings.get("PAGESTORE_DIR") or ""
        if not store_dir:
            raise ValueError("PAGESTORE_DIR must be set: analysis reads the page store")
        config = cls(
            default_analyzer=settings.get("ANALYSIS_DEFAULT") or "",
            max_attempts=settings.getint("ANALYSIS_MAX_ATTEMPTS"),
            claim_timeout=settings.getfloat("ANALYSIS_CLAIM_TIMEOUT"),
            alert_url=settings.get("ANALYSIS_ALERT") or "",
            stream_maxlen=settings.getint("ANALYSIS_STREAM_MAXLEN"),
            store_dir=Path(store_dir),
        )
        config.check()
        return config

    def check(self) -> None:
        """Raise ``ValueError`` with one line naming the setting that is wrong."""
        if not self.default_analyzer:
            raise ValueError("ANALYSIS_DEFAULT must name an analyzer class")
        if self.max_attempts < 1:
            raise ValueError(
                f"ANALYSIS_MAX_ATTEMPTS must be >= 1, got {self.max_attempts!r}"
            )
        if not self.claim_timeout > 0:
            raise ValueError(
                f"ANALYSIS_CLAIM_TIMEOUT must be > 0 seconds, got {self.claim_timeout!r}"
            )
        if self.stream_maxlen < 1:
            raise ValueError(
                f"ANALYSIS_STREAM_MAXLEN must be >= 1, got {self.stream_maxlen!r}"
            )
        if self.alert_url and urlsplit(self.alert_url).scheme not in ("http", "https"):
            raise ValueError(
                f"ANALYSIS_ALERT must be empty or an http(s) URL, got {self.alert_url!r}"
            )
