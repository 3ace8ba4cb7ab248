"""Reports of dead-lettered tasks: an ERROR log line always, a webhook POST if set."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from crawler.crawlstate.connection import masked

logger = logging.getLogger(__name__)

# Seconds a webhook may take to answer before the alert is given up (and logged).
WEBHOOK_TIMEOUT = 5.0


def alert(url: str, payload: dict[str, Any]) -> bool:
    """Log *payload* at ERROR; POST it as JSON to *url* (an http(s) URL) if given.

    Never raises: a webhook that fails is logged. Returns whether the POST (if any)
    was answered with a 2xx status.
    """
    logger.error(
        "Analysis task %(task_id)s of %(url)s dead-lettered as %(dead_id)s after "
        "%(attempts)s attempts: %(error)s",
        payload,
    )
    if not url:
        return True
    if urlsplit(url).scheme not in ("http", "https"):
        logger.error("ANALYSIS_ALERT %(url)s is not an http(s) URL", {"url": url})
        return False
    body = json.dumps(payload, default=str).encode()
    request = urllib.request.Request(  # noqa: S310 (scheme checked above)
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT) as response:  # noqa: S310 (scheme checked above)
            return bool(200 <= response.status < 300)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        logger.error(
            "Analysis alert to %(url)s failed: %(error)s",
            {"url": masked(url), "error": exc},
        )
        return False
