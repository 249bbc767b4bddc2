"""The crawl context: what one Tarantula crawl shares, built once and reached from every component.

Scrapy hangs what a whole crawl shares on the crawler (``crawler.stats``, ``crawler.signals``);
Tarantula's own shared parts hang there the same way: the parsed configuration, the URL rules, the
repository with its crawl state (run log, frontier, document store) and the politeness state.
The spider builds the context from its configuration when Scrapy creates it
(:meth:`tarantula.spiders.tarantula.TarantulaSpider.from_crawler`), the one place that knows the
``conf`` argument; every component reaches it with :func:`context_of`, which raises
``NotConfigured`` for a crawl that is not Tarantula's, so the component switches itself off the
way Scrapy's own do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from scrapy.exceptions import NotConfigured

from tarantula.core.politeness import Politeness
from tarantula.core.repository import Repository
from tarantula.core.rules import UrlRules

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import DocumentStore, StoredDocument
    from tarantula.core.frontier import SqliteFrontier
    from tarantula.core.state import CrawlState
    from tarantula.frontiers.redis import RedisFrontier
    from tarantula.frontiers.redis_state import RedisDocumentStore, RedisState


@dataclass(eq=False)
class CrawlContext:
    config: CrawlConfig
    rules: UrlRules
    repository: Repository
    state: CrawlState | RedisState
    politeness: Politeness
    worker: str = ""  # this process's name in a crawl shared through Redis

    @classmethod
    def build(
        cls, config: CrawlConfig, *, in_memory: bool = False, worker: str | None = None
    ) -> CrawlContext:
        """The context of a crawl of ``config``; ``in_memory`` keeps a state that no file holds
        (``scrapy check``). With ``<distributed-options> redis`` the state and the politeness are
        shared through Redis (:mod:`tarantula.frontiers.shared`), this process being ``worker``."""
        repository = Repository(config.repository)
        state: CrawlState | RedisState
        politeness: Politeness
        if config.redis and not in_memory:
            from tarantula.frontiers.shared import open_shared

            state, politeness = open_shared(config, repository.root, worker)
            worker = state.frontier.worker
        else:
            state = repository.open_state(config.traversal_algorithm, in_memory=in_memory)
            politeness = Politeness(
                config.delay,
                config.delay_factor,
                config.host_concurrency,
                config.host_failures,
                config.max_retry_after,
            )
        return cls(
            config=config, rules=UrlRules(config), repository=repository, state=state,
            politeness=politeness, worker=worker or "",
        )  # fmt: skip

    @property
    def frontier(self) -> SqliteFrontier | RedisFrontier:
        return self.state.frontier

    @property
    def documents(self) -> DocumentStore | RedisDocumentStore:
        return self.state.documents

    def remove_document(
        self, url: str, why: str, stats: StatsCollector | None = None
    ) -> StoredDocument | None:
        """Forget a stored document and delete its copy (gone from the web, moved, or now a copy
        of another), counted in ``stats`` as ``tarantula/recrawl/removed``; returns what it was,
        None when it was not stored."""
        doc = self.documents.remove(url)
        if doc is not None:
            (self.repository.root / doc.path).unlink(missing_ok=True)
            logger.info("Removed %s (%s) and its copy %s", url, why, doc.path)
            if stats is not None:
                stats.inc_value("tarantula/recrawl/removed")
        return doc


logger = logging.getLogger(__name__)

_CONTEXTS: WeakKeyDictionary[Crawler, CrawlContext] = WeakKeyDictionary()


def attach(crawler: Crawler, context: CrawlContext) -> None:
    _CONTEXTS[crawler] = context


def context_of(crawler: Crawler) -> CrawlContext:
    """The context of ``crawler``'s crawl; ``NotConfigured`` when it is not a Tarantula crawl."""
    context = _CONTEXTS.get(crawler)
    if context is None:
        raise NotConfigured("not a Tarantula crawl (no crawl context)")
    return context
