"""Defaults of the dashboard settings (``DASHBOARD_*``): where ``scrapy frontier web``
serves and how often it refreshes, read by crawler/dashboard/."""

# The address the dashboard serves on (--host); loopback: only this machine sees it.
DASHBOARD_HOST = "127.0.0.1"
# Its port (--port; 0: any free port, printed at start).
DASHBOARD_PORT = 8080
# Seconds between two refreshes of the page's numbers.
DASHBOARD_REFRESH = 3.0
