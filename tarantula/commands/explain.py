"""``scrapy explain CONF URL...``: what the crawl would do with each URL, and which rule decided.

Like HTTrack's ``--why`` or Heritrix's decide-rule logs, for tuning scope and filters: for each URL
it prints the normalized form, whether it would be fetched, stored (and indexed) and listed as a
link, and the rule behind each answer. It needs no network unless ``--robots`` is given, which
fetches the hosts' robots.txt (honouring the config's ``resolve`` mapping) and applies it as the
crawl would. Depth and duplicate content depend on the crawl itself and are not judged.
"""

from __future__ import annotations

import http.client
from typing import TYPE_CHECKING

from protego import Protego
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from tarantula.commands import load_or_report
from tarantula.core.config import CrawlConfig
from tarantula.core.links import explain
from tarantula.core.rules import UrlRules
from tarantula.core.scope import origin
from tarantula.downloadermiddlewares.robotstxt import robots_rules
from tarantula.resolver import lookup

if TYPE_CHECKING:
    import argparse


def fetch_robots(config: CrawlConfig, url: str) -> Protego:
    """The robots.txt rules of ``url``'s host, read as the crawl reads them (RFC 9309)."""
    host, port, _, _ = origin(url)
    scheme = url.partition("://")[0]
    address = lookup(dict(config.resolve), host)
    if address is None and config.resolve_only:
        return Protego.parse(robots_rules(None, b"").decode())
    connection_class = (
        http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    )
    connection = connection_class(address or host, port, timeout=10)
    try:
        connection.request("GET", "/robots.txt", headers={"Host": url.partition("://")[2].partition("/")[0],
                                                            "User-Agent": config.user_agent})  # fmt: skip
        response = connection.getresponse()
        status, body = response.status, response.read()
    except OSError:
        status, body = None, b""
    finally:
        connection.close()
    return Protego.parse(robots_rules(status, body).decode("utf-8", "ignore"))


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[options] CONF URL [URL ...]"

    def short_desc(self) -> str:
        return "Say whether URLs would be fetched, stored and listed, and which rule decided"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--robots", action="store_true", help="fetch robots.txt and apply it")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) < 2:
            raise UsageError("give the configuration file and at least one URL")
        config = load_or_report(self, args[0])
        if config is None:
            return
        rules = UrlRules(config)
        robots: dict[tuple[str, int], Protego] = {}
        for url in args[1:]:
            allowed = None
            verdict = rules.check(url)
            if opts.robots and verdict.url is not None and verdict.listed:
                key = origin(verdict.url)[:2]
                if key not in robots:
                    robots[key] = fetch_robots(config, verdict.url)
                allowed = robots[key].can_fetch(verdict.url, "tarantula")
            e = explain(rules, url, allowed)
            print(url)
            print(f"  normalized  {e.normalized or '-'}")
            print(f"  fetched     {e.fetched}")
            print(f"  stored      {e.stored}")
            print(f"  listed      {e.listed}")
            for reason in e.reasons:
                print(f"  because     {reason}")
