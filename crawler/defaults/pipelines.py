"""Defaults of what is kept of each page (``PAGESTORE_*``, ``STORAGE_*``,
``RECORDS_*``, ``WARC_*``, ``ANALYSIS_*``): the page store and the storage it writes
to, the page-record database, WARC files and analysis tasks, read by
crawler/pipelines/, crawler/storage/ and crawler/analysis/."""

# Where the page store keeps one object per page, at a key mirroring its URL: a
# directory (a path or file:///path) or s3://bucket/prefix (docs/storage.md); empty:
# off. PAGESTORE_DIR, its former name, is still read.
PAGESTORE_URL = ".crawl/pages"
# Writes to an S3 store running at once per process (threads and connections).
STORAGE_MAX_UPLOADS = 16
# Tries of one S3 call (botocore's standard retries, with back-off) before the
# page waits and is tried again.
STORAGE_RETRY_ATTEMPTS = 5
# Seconds to connect to, and to wait for an answer from, an S3 server.
STORAGE_TIMEOUT = 30.0
# Where page records go: sqlite:///relative/path, sqlite:////absolute/path or
# postgresql://user:pass@host/db; empty: off.
RECORDS_DATABASE_URL = "sqlite:///.crawl/pages.db"
# Records written in one transaction; while the database cannot be written, up to 100
# batches are held, then the oldest are dropped (records/dropped).
RECORDS_BATCH_SIZE = 100
# Where WARC files of every request and response go: a directory (a path or
# file:///path) or s3://bucket/prefix, where each file is uploaded whole once closed;
# empty: off. WARC_DIR, its former name, is still read.
WARC_URL = ""
# Where WARC files are written before their upload when WARC_URL is an object store.
WARC_SPOOL_DIR = ".crawl/warc-spool"
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
# Where analysis results go, each at its page's key + ".analysis.json": an address
# as PAGESTORE_URL takes (a path, file:///path, s3://bucket/prefix); empty: beside
# each page in the page store.
ANALYSIS_RESULTS_URL = ""
# Analyzers by name, for ANALYSIS_DEFAULT, analysis_rules and tasks: a dotted class
# path, or an external program {"argv": ["prog", "{page}", "{result}"], "timeout":
# 60} (templates {page} {result} {url} {type}; no shell); tasks name no other program.
ANALYZERS: dict[str, object] = {}
