"""From a parsed configuration to the Scrapy settings and the shared context of one crawl."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tarantula.context import CrawlContext, attach
from tarantula.core.config import CrawlConfig, load_config
from tarantula.downloadermiddlewares.render import render_settings
from tarantula.resolver import add_mappings, installed_resolver

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import Settings

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
        # Politeness (delay, Crawl-delay, delay-factor, host-concurrency, back-off) is the
        # frontier's alone: it hands a host's URL out only when the host may be contacted, so
        # Scrapy's download slots add no limit and no delay of their own.
        "CONCURRENT_REQUESTS_PER_DOMAIN": config.threads,
        "DOWNLOAD_DELAY": 0,
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


def quiet_loggers(level: str | int) -> None:
    """Set the crawl's log level on the loggers of the crawl itself.

    Scrapy filters by level in its handler, after every debug message has been built into a
    record; with the level on the loggers, a message below it costs one comparison.
    """
    for name in ("scrapy", "tarantula", "protego", "twisted"):
        logging.getLogger(name).setLevel(level)


def configure(settings: Settings, config: CrawlConfig) -> None:
    """Turn ``config`` into the crawl's Scrapy settings (at "spider" priority: ``-s`` still wins),
    its loggers' level and its host-name mapping."""
    settings.setdict(crawl_settings(config), priority="spider")
    quiet_loggers(settings.get("LOG_LEVEL"))
    add_mappings(config.resolve, config.resolve_only)
    resolver = installed_resolver()
    mapping, only = (
        (resolver.mapping, resolver.only)
        if resolver
        else (dict(config.resolve), config.resolve_only)
    )
    settings.setdict(render_settings(config, mapping, only), priority="spider")
    if config.logged_in:
        # A logged-in crawl's middlewares (SPEC 13), named only then: Scrapy's cookie middleware,
        # which the cookie jar builds on, imports tldextract, which a crawl of the open web
        # does without.
        middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
        middlewares |= {
            "tarantula.downloadermiddlewares.auth.AuthMiddleware": 620,
            "tarantula.downloadermiddlewares.cookies.CookieFileMiddleware": 700,
        }
        settings.set("DOWNLOADER_MIDDLEWARES", middlewares, priority="spider")


def load_crawl_config(conf: str | Path | None) -> CrawlConfig:
    """The crawl's configuration; ``scrapy check`` without ``-a conf`` gets the demo-site one."""
    if conf is None:
        from tarantula.contracts import check_config

        return check_config()
    return load_config(conf)


def build_context(crawler: Crawler, config: CrawlConfig, worker: str | None = None) -> CrawlContext:
    """Configure ``crawler`` for ``config`` and attach the crawl's context to it. The state is
    kept in memory under ``scrapy check`` or with ``TARANTULA_STATE_IN_MEMORY``; ``worker`` names
    this process in a crawl shared through Redis."""
    configure(crawler.settings, config)
    in_memory = crawler.settings.getbool("TARANTULA_STATE_IN_MEMORY") or bool(
        os.environ.get("SCRAPY_CHECK")
    )
    context = CrawlContext.build(config, in_memory=in_memory, worker=worker)
    attach(crawler, context)
    return context
