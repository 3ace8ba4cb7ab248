"""An item pipeline of the project's own: marks every item it saw."""

from __future__ import annotations

from typing import Any


class StampPipeline:
    def process_item(self, item: Any) -> Any:
        if isinstance(item, dict):
            item["stamped"] = True
        return item
