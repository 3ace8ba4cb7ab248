"""Placeholder: being written."""


class AnalysisPipeline:
    def process_item(self, item: object) -> object:
        return item
