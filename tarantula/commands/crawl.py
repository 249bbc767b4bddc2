"""``scrapy crawl`` that checks Tarantula's configuration before the engine starts.

For the ``tarantula`` spider the configuration file is parsed here, before any request: a bad file
prints one ``FILE:LINE:COL: error: ...`` line per problem and exits with status 2, with no
traceback. After the crawl the summary is printed, and the exit status is 1 when Tarantula's own
code logged an error (Scrapy alone would exit 0). Other spiders run as with Scrapy's command.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError

from tarantula.core.config import ConfigError, load_config
from tarantula.extensions.summary import CrawlSummary
from tarantula.spiders.tarantula import TarantulaSpider

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or args[0] != TarantulaSpider.name:
            super().run(args, opts)
            return
        assert self.crawler_process is not None and self.settings is not None
        conf = opts.spargs.get("conf") or self.settings.get("TARANTULA_CONF")
        if not conf:
            raise UsageError("no configuration file: use -a conf=PATH", print_help=False)
        try:
            config = load_config(conf)
        except ConfigError as exc:
            print(exc, file=sys.stderr)
            self.exitcode = 2
            return
        crawler = self._create_crawler(TarantulaSpider.name)
        self.crawler_process.crawl(crawler, **opts.spargs, config=config)
        self.crawler_process.start()
        summary = crawler.get_extension(CrawlSummary)
        if summary is not None and summary.text:
            print(summary.text)
        if self.crawler_process.bootstrap_failed or (summary is not None and summary.errors):
            self.exitcode = 1
