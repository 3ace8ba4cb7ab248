"""Analyzers by name: an ``ANALYZERS`` entry, or a class by dotted path, only from
allowed modules.

Tasks come from Redis, which anyone with access to it can write: a task's analyzer
name is hostile input. A name is looked up in the worker's own ``ANALYZERS`` (so a
task runs only programs the worker configured); any other name must be a dotted
path into the allow-list. Only allowed modules are imported (importing runs a
module's code), and only a class with a callable ``analyze`` is accepted; nothing
is ever unpickled.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, cast

from crawler.analysis.programs import ProgramAnalyzer, ProgramSpec
from crawler.analysis.tasks import BadTaskError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from crawler.analysis.analyzers import Analyzer

# Modules every worker may load analyzers from (the shipped analyzers).
BUILTIN_MODULES = ("crawler.analysis.analyzers",)
DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", re.ASCII)


class AnalyzerLoader:
    """Analyzer instances by name (``ANALYZERS``) or dotted path, made once each
    per worker."""

    def __init__(
        self,
        allowed: Iterable[str],
        named: Mapping[str, str | ProgramSpec] | None = None,
    ) -> None:
        self._allowed = tuple(dict.fromkeys([*BUILTIN_MODULES, *allowed]))
        self._named = dict(named or {})
        self._instances: dict[str, Analyzer | ProgramAnalyzer] = {}

    @property
    def allowed(self) -> tuple[str, ...]:
        return self._allowed

    def get(self, name: str) -> Analyzer | ProgramAnalyzer:
        """The analyzer *name* names (an ``ANALYZERS`` entry, else a dotted path);
        raise ``BadTaskError`` if it is not allowed, does not import, or is not a
        class with an ``analyze`` method."""
        if (found := self._instances.get(name)) is None:
            found = self._instances[name] = self._make(name)
        return found

    def _make(self, name: str) -> Analyzer | ProgramAnalyzer:
        spec = self._named.get(name, name)
        if isinstance(spec, ProgramSpec):
            return ProgramAnalyzer(spec)
        return self._load(spec)

    def is_allowed(self, module: str) -> bool:
        return any(
            module == allowed or module.startswith(allowed + ".")
            for allowed in self._allowed
        )

    def _load(self, path: str) -> Analyzer:
        if len(path) > 200 or not DOTTED.fullmatch(path):
            raise BadTaskError(
                f"analyzer {path[:200]!r} is neither in ANALYZERS nor a dotted path"
            )
        module_name, _, name = path.rpartition(".")
        if not self.is_allowed(module_name):
            raise BadTaskError(
                f"analyzer {path!r} is not in an allowed module {list(self._allowed)}"
            )
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise BadTaskError(f"analyzer {path!r} does not import: {exc}") from None
        found = getattr(module, name, None)
        if not isinstance(found, type) or not callable(getattr(found, "analyze", None)):
            raise BadTaskError(f"{path!r} is not a class with an analyze method")
        try:
            return cast("Analyzer", found())
        except TypeError as exc:  # a Protocol, or a constructor taking arguments
            raise BadTaskError(f"analyzer {path!r} cannot be made: {exc}") from None


def module_of(path: str) -> str:
    """The module part of a dotted path."""
    return path.rpartition(".")[0]
