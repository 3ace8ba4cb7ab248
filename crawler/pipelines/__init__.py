"""Item pipelines of the project (page store, page records, analysis)."""
