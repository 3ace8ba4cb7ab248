"""The analysis split: tasks queued per stored page, run by ``scrapy analyze``.

See docs/analysis.md: ``tasks`` is the task format, ``loader`` finds analyzers by
``ANALYZERS`` name or by dotted path from an allow-list, ``analyzers`` holds the
interface and the two shipped analyzers, ``programs`` runs external programs as
analyzers, ``worker`` is the consumer (reading pages from the page store, putting
results in it), ``alerts`` reports dead-lettered tasks.
"""
