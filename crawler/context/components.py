"""Which of our components a crawl's settings turn on, for components whose work
depends on another's presence.

Compared by class path, as the add-on names its components: the context sits below
the pipelines it asks about and does not import them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

PAGE_STORE_PIPELINE = "crawler.pipelines.pagestore.PageStorePipeline"
RECORDS_PIPELINE = "crawler.pipelines.records.RecordsPipeline"


def page_store_on(settings: BaseSettings) -> bool:
    """Whether this crawl stores pages: ``PAGESTORE_URL`` set and the pipeline among
    ``ITEM_PIPELINES`` (``-s ITEM_PIPELINES={}`` turns it off). Depth repair answers
    a page again from the store only then; otherwise it never fetches it twice."""
    if not settings.get("PAGESTORE_URL"):
        return False
    pipelines = build_component_list(settings.getwithbase("ITEM_PIPELINES"))
    return PAGE_STORE_PIPELINE in {_path_of(pipeline) for pipeline in pipelines}


def records_on(settings: BaseSettings) -> bool:
    """Whether this crawl writes page records: ``RECORDS_DATABASE_URL`` set and the
    pipeline among ``ITEM_PIPELINES``. Site histories are carried over crawls in the
    same database only then."""
    if not settings.get("RECORDS_DATABASE_URL"):
        return False
    pipelines = build_component_list(settings.getwithbase("ITEM_PIPELINES"))
    return RECORDS_PIPELINE in {_path_of(pipeline) for pipeline in pipelines}


def _path_of(component: object) -> str:
    cls = load_object(component) if isinstance(component, str) else component
    return f"{getattr(cls, '__module__', '')}.{getattr(cls, '__qualname__', '')}"
