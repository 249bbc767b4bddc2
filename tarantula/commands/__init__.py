"""Tarantula's Scrapy commands: ``crawl`` (Scrapy's, with the configuration checked first),
``watch`` (service mode) and ``explain`` (what would happen to a URL)."""

from __future__ import annotations

import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand

from tarantula.core.config import ConfigError, CrawlConfig, load_config


def load_or_report(command: ScrapyCommand, path: str | Path) -> CrawlConfig | None:
    """The configuration at ``path``; on a bad file, its ``FILE:LINE:COL: error:`` lines go to
    stderr, the command's exit status becomes 2 and None is returned."""
    try:
        return load_config(path)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        command.exitcode = 2
        return None
