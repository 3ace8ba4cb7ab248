"""The crawl's state as people read it: the status report and the hosts table,
shared by ``scrapy frontier`` and the dashboard."""
