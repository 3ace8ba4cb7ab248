"""Placeholder: being written."""


class PageStorePipeline:
    def process_item(self, item: object) -> object:
        return item
