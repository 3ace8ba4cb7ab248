"""The analysis split: tasks queued per stored page, run by ``scrapy analyze``.

See docs/analysis.md: ``tasks`` is the task format, ``loader`` loads analyzers by
dotted path from an allow-list, ``analyzers`` holds the interface and the two shipped
analyzers, ``worker`` is the consumer, ``alerts`` reports dead-lettered tasks.
"""
