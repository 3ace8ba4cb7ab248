"""Which classes a queue entry may name: items and dataclasses of the spider's code.

A stored Scrapy item or dataclass instance names its class ``module:QualName``. On
decode the name is resolved only in a module that is already imported (never
imported for it), under an allowed package, by reading namespaces (no attribute hook
runs), and only to a class defined exactly there that is an ``Item`` subclass or a
dataclass. Anything else read from Redis is hostile and refused.
"""

from __future__ import annotations

import dataclasses
import sys
from functools import cached_property
from typing import TYPE_CHECKING, Any

from scrapy import Item

if TYPE_CHECKING:
    from collections.abc import Mapping

# Modules whose classes may always be stored, whatever the spider.
ALWAYS_ALLOWED = ("crawler.items",)


class ClassNotAllowedError(ValueError):
    """A class name outside the allow-list, or one that names no allowed class."""


class Classes:
    """Where stored item and dataclass classes may come from: the spider's packages.

    The allowed packages are the top-level packages of the spider's class and of the
    ``SPIDER_MODULES`` setting, plus ``ALWAYS_ALLOWED``; computed only when a class
    is met, since most requests carry none.
    """

    def __init__(self, spider: object) -> None:
        self._spider = spider

    @cached_property
    def packages(self) -> tuple[str, ...]:
        names = [type(self._spider).__module__]
        settings = getattr(self._spider, "settings", None)
        if settings is not None:
            names += settings.getlist("SPIDER_MODULES")
        tops = {name.split(".")[0] for name in names if isinstance(name, str)}
        return (*sorted(tops), *ALWAYS_ALLOWED)

    def allows(self, module: str) -> bool:
        parts = module.split(".")
        if not all(part.isidentifier() and not part.startswith("__") for part in parts):
            return False
        return any(
            module == package or module.startswith(package + ".")
            for package in self.packages
        )

    def name_of(self, kind: type) -> str:
        """The name ``resolve`` turns back into *kind*, or ``ClassNotAllowedError``."""
        name = f"{kind.__module__}:{kind.__qualname__}"
        if self.resolve(name) is not kind:
            raise ClassNotAllowedError(f"{name} names another class")
        return name

    def resolve(self, name: object) -> type:
        """The allowed item or dataclass *name*, found without importing anything."""
        if not isinstance(name, str):
            raise ClassNotAllowedError("a class name that is not a string")
        module_name, _, qualname = name.partition(":")
        if not self.allows(module_name):
            raise ClassNotAllowedError(
                f"class {name!r} is outside the spider's modules"
            )
        module = sys.modules.get(module_name)
        namespace: Mapping[str, Any] = vars(module) if module is not None else {}
        found: object = None
        for part in qualname.split("."):
            if not part.isidentifier() or part.startswith("__"):
                raise ClassNotAllowedError(f"class name {name!r} is not allowed")
            found = namespace.get(part)
            if not isinstance(found, type):
                raise ClassNotAllowedError(f"no class {name!r} in an imported module")
            namespace = vars(found)
        assert isinstance(found, type)
        if found.__module__ != module_name or found.__qualname__ != qualname:
            raise ClassNotAllowedError(f"{name!r} is not defined where it says")
        if not (issubclass(found, Item) or dataclasses.is_dataclass(found)):
            raise ClassNotAllowedError(f"{name!r} is neither an Item nor a dataclass")
        return found
