"""Placeholder: being written."""


class RecordsPipeline:
    def process_item(self, item: object) -> object:
        return item
