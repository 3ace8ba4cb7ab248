"""Defaults of what is kept of each page (``PAGESTORE_*``, ``RECORDS_*``, ``WARC_*``,
``ANALYSIS_*``): the page store, the page-record database, WARC files and analysis
tasks, read by crawler/pipelines/ and crawler/analysis/."""

# Root of the page store: one file per page at a path mirroring its URL; empty: off.
PAGESTORE_DIR = ".crawl/pages"
# Where page records go: sqlite:///relative/path, sqlite:////absolute/path or
# postgresql://user:pass@host/db; empty: off.
RECORDS_DATABASE_URL = "sqlite:///.crawl/pages.db"
# Records written in one transaction; while the database cannot be written, up to 100
# batches are held, then the oldest are dropped (records/dropped).
RECORDS_BATCH_SIZE = 100
# Directory of WARC files of every request and response; empty: off.
WARC_DIR = ""
# Size (bytes) at which a WARC file is closed and the next one started.
WARC_MAX_SIZE = 1_000_000_000
# Queue an analysis task per stored page on a Redis Stream for `scrapy analyze`.
ANALYSIS_ENABLED = False
# Import path of the analyzer of pages no spider rule names; `scrapy analyze` loads
# only from its module, crawler.analysis.analyzers and modules given with --allow.
ANALYSIS_DEFAULT = "crawler.analysis.analyzers.TextAnalyzer"
# Attempts of a task in total (a worker dying mid-task counts) before it is
# dead-lettered and alerted.
ANALYSIS_MAX_ATTEMPTS = 3
# Seconds after which a task claimed by a worker that stopped is taken by another;
# keep it above the longest analysis, or a slow task may be run twice.
ANALYSIS_CLAIM_TIMEOUT = 60.0
# Where a dead-lettered task is reported besides the ERROR log: empty, or an
# http(s) URL that receives a JSON POST.
ANALYSIS_ALERT = ""
# Longest the task and dead-letter streams grow (approximate trimming), in tasks.
ANALYSIS_STREAM_MAXLEN = 1_000_000
