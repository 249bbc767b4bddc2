"""From a parsed configuration to the Scrapy settings of one crawl."""

from __future__ import annotations

from typing import Any

from tarantula.core.config import CrawlConfig

LOG_LEVELS = {0: "WARNING", 1: "INFO", 2: "DEBUG"}


def log_settings(config: CrawlConfig) -> dict[str, Any]:
    """The Scrapy settings of the ``<logging>`` section: where the log goes and from which level.

    >>> from pathlib import Path
    >>> log_settings(CrawlConfig(path=Path("/c/x.conf"), starting_points=("http://h/",),
    ...                          log_file=Path("x.log"), log_level=0))
    {'LOG_LEVEL': 'WARNING', 'LOG_FILE': '/c/x.log'}
    """
    return {
        "LOG_LEVEL": LOG_LEVELS[config.log_level],
        "LOG_FILE": str(config.log_file) if config.log_file else None,
    }


def crawl_settings(config: CrawlConfig) -> dict[str, Any]:
    """Scrapy settings that carry out ``config`` (set at "spider" priority, so ``-s`` still wins).

    >>> from pathlib import Path
    >>> s = crawl_settings(CrawlConfig(path=Path("/c/x.conf"), starting_points=("http://h/",), threads=1))
    >>> s["CONCURRENT_REQUESTS"], s["SCRAPER_SLOT_MAX_ACTIVE_SIZE"], s["LOG_LEVEL"], s["LOG_FILE"]
    (1, 0, 'INFO', None)
    """
    settings: dict[str, Any] = {
        "CONCURRENT_REQUESTS": config.threads,
        "CONCURRENT_REQUESTS_PER_DOMAIN": config.host_concurrency,
        "DOWNLOAD_DELAY": config.delay,
        "CLOSESPIDER_TIMEOUT": config.time_limit,
        # max-depth is applied by the spider, which counts and logs each link it drops;
        # DepthMiddleware still keeps request.meta["depth"].
        "DEPTH_LIMIT": 0,
        "URLLENGTH_LIMIT": config.max_url_length,
        "DOWNLOAD_MAXSIZE": config.max_document_size,
        "DOWNLOAD_WARNSIZE": 0,
        "USER_AGENT": config.user_agent,
        **log_settings(config),
    }
    if config.threads == 1:
        # One document at a time, start to finish: the engine asks for the next request only once
        # the previous response has been parsed and its links queued, so bfs/dfs order is exact.
        settings["SCRAPER_SLOT_MAX_ACTIVE_SIZE"] = 0
    return settings
