"""Item pipelines: the page store's and the page records'. The analysis task's is in
``crawler.analysis``."""
