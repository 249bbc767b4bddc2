"""A Tarantula crawl as its components see it, with no engine and no network: a crawler with the
project's settings (:data:`PROJECT_SETTINGS`), its crawl context and spider (:class:`Crawl`, made
by :class:`Crawls` from :func:`crawl_config`), and the items the spider yields
(:func:`document`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

import tarantula.settings
from tarantula.context import CrawlContext, attach
from tarantula.core.config import CrawlConfig
from tarantula.core.urls import url_md5
from tarantula.items import Document
from tarantula.spiders.tarantula import TarantulaSpider
from tarantula.store.sqlite import SqliteStore

#: The values of the project's settings module, as ``scrapy crawl`` would load them.
PROJECT_SETTINGS = {
    name: value for name, value in vars(tarantula.settings).items() if name.isupper()
}


def crawl_config(tmp_path: Path, **keys: Any) -> CrawlConfig:
    """A configuration with politeness off (no delay) and its repository at ``tmp_path/repo``."""
    keys.setdefault("delay", 0.0)
    keys.setdefault("starting_points", ("http://a.test/",))
    return CrawlConfig(path=tmp_path / "c.conf", repository=tmp_path / "repo", **keys)


@dataclass
class Crawl:
    """A Tarantula crawl as its components see it."""

    crawler: Crawler
    context: CrawlContext
    spider: TarantulaSpider

    def stat(self, key: str) -> Any:
        return self.crawler.stats.get_value(key)

    def urls(self) -> dict[str, tuple[int, str | None]]:
        """Every URL of the frontier with its state (0 queued, 1 leased, 2 done) and outcome (the
        SQLite store's: Redis keeps no outcome of a single URL, see :meth:`state`)."""
        rows = self.context.store.db.execute("SELECT url, state, outcome FROM urls")
        return {url: (state, outcome) for url, state, outcome in rows}

    def state(self, url: str) -> int | None:
        """The frontier state of ``url`` on either store (0 queued, 1 leased, 2 done; None: never
        seen)."""
        store = self.context.store
        if isinstance(store, SqliteStore):
            row = store.db.execute("SELECT state FROM urls WHERE url = ?", (url,)).fetchone()
            return row[0] if row else None
        frontier: Any = self.context.frontier
        frontier.flush()
        h8, signed, bucket = frontier._id(url)
        raw = frontier.client.hget(frontier.prefix + "u", h8)
        if raw is not None:
            return raw[0]  # a record's first byte is its state
        return 2 if frontier.client.sismember(f"{frontier.prefix}s:{bucket}", str(signed)) else None

    def outcomes(self) -> dict[str, int]:
        """How many URLs are done with each outcome, on either store."""
        store = self.context.store
        if isinstance(store, SqliteStore):
            rows = store.db.execute("SELECT outcome, count(*) FROM urls WHERE state = 2 GROUP BY 1")
            return dict(rows.fetchall())
        frontier: Any = self.context.frontier
        frontier.flush()
        counts = frontier.client.hgetall(frontier.prefix + "outcome")
        return {k.decode(): int(v) for k, v in counts.items() if int(v)}


class Crawls:
    """Makes crawls of one repository; the SQLite connections they leave open are closed at the
    end of the test."""

    def __init__(self, tmp_path: Path, redis: str = "") -> None:
        self.tmp_path = tmp_path
        self.redis = redis  # a Redis server's URL: the crawls share their state through it
        self.made: list[Crawl] = []

    def __call__(
        self, config: CrawlConfig | None = None, *, in_memory: bool = False, **keys: Any
    ) -> Crawl:
        if self.redis:
            keys.setdefault("redis", self.redis)
        config = config or crawl_config(self.tmp_path, **keys)
        context = CrawlContext.build(config, in_memory=in_memory)
        # A run after a complete crawl is its recrawl, as with -a recrawl=yes: the period's own
        # decision is tested apart (test_scheduler).
        context.recrawl_now = True
        crawler = get_crawler(TarantulaSpider, PROJECT_SETTINGS)
        attach(crawler, context)
        spider = TarantulaSpider(context=context)
        crawler.spider = spider
        crawl = Crawl(crawler, context, spider)
        self.made.append(crawl)
        return crawl

    def close(self) -> None:
        for crawl in self.made:
            crawl.context.store.close()  # a no-op when the run closed it already


SERVED = "Mon, 05 Jan 2026 10:00:00 GMT"


class OtherSpider(Spider):
    name = "other"


def md5_of(body: bytes) -> str:
    return hashlib.md5(body, usedforsecurity=False).hexdigest()


def document(url: str, body: bytes, *, doc_type: str = "html", **fields: Any) -> Document:
    """The item the spider yields for a response of ``url`` (normalized) with ``body``."""
    fields.setdefault("md5", md5_of(body))
    return Document(
        url=url,
        original_url=url,
        url_md5=url_md5(url),
        title="A page",
        encoding="utf-8",
        type=doc_type,
        last_modified=None,
        server_date=SERVED,
        body=body,
        **fields,
    )
