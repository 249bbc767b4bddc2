"""Tarantula's Scrapy commands: ``crawl`` (Scrapy's, with the configuration checked first),
``watch`` (service mode), ``explain`` (what would happen to a URL), ``verify`` (is a repository
whole) and ``merge`` (combine the folders of a crawl shared through Redis). Scrapy finds each
module's ``Command`` through the ``COMMANDS_MODULE`` setting."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand

from tarantula import store
from tarantula.core.config import ConfigError, CrawlConfig, load_config
from tarantula.core.state import Run

logger = logging.getLogger(__name__)


def tell(command: ScrapyCommand, message: str, level: int = logging.INFO) -> None:
    """Say ``message`` on the terminal (stderr for warnings and errors), and in the log file too
    when there is one: a scrapyd job's output is its log file."""
    print(message, file=sys.stderr if level >= logging.WARNING else sys.stdout)
    if command.settings is not None and command.settings.get("LOG_FILE"):
        for line in message.splitlines():
            logger.log(level, "%s", line)


def load_or_report(command: ScrapyCommand, path: str | Path) -> CrawlConfig | None:
    """The configuration at ``path``, its warnings (such as ``FILE:LINE:COL: warning: not valid
    UTF-8; read as Windows-1253``) told (:func:`tell`); on a bad file, its warnings and its
    ``FILE:LINE:COL: error:`` lines are told, the command's exit status becomes 2 and None is
    returned."""
    try:
        config = load_config(path)
    except ConfigError as exc:
        for warning in exc.warnings:
            tell(command, warning, logging.WARNING)
        tell(command, str(exc), logging.ERROR)
        command.exitcode = 2
        return None
    for warning in config.warnings:
        tell(command, warning, logging.WARNING)
    return config


def last_run(config: CrawlConfig) -> Run | None:
    """The latest run of ``config``'s crawl, read without changing anything."""
    return store.last_run(config)
