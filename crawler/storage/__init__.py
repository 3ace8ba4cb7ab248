"""Where a crawl's pages, WARC files and analysis results go: a directory or an
S3-compatible bucket, one address each (docs/storage.md)."""
