"""The crawl context: what one Tarantula crawl shares, built once and reached from every component.

Scrapy hangs what a whole crawl shares on the crawler (``crawler.stats``, ``crawler.signals``);
Tarantula's own shared parts hang there the same way: the parsed configuration, the URL rules, the
repository with its crawl state (run log, frontier, document store), the leases this process
holds (:mod:`tarantula.leases`) and the politeness state.
The store (:mod:`tarantula.store`) is held by its contract: nothing here knows which backend it is.
The spider builds the context from its configuration when Scrapy creates it
(:meth:`tarantula.spiders.tarantula.TarantulaSpider.from_crawler`), the one place that knows the
``conf`` argument; every component reaches it with :func:`context_of`, which raises
``NotConfigured`` for a crawl that is not Tarantula's, so the component switches itself off the
way Scrapy's own do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from scrapy.exceptions import NotConfigured

from tarantula.core.politeness import Politeness
from tarantula.core.repository import Repository
from tarantula.core.rules import UrlRules
from tarantula.leases import Leases
from tarantula.store import CrawlStore, DocumentStore, Frontier, open_store

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import StoredDocument
    from tarantula.login import Login


@dataclass(eq=False)
class CrawlContext:
    config: CrawlConfig
    rules: UrlRules
    repository: Repository
    store: CrawlStore
    politeness: Politeness
    worker: str = ""  # this process's name in a crawl shared by several
    leases: Leases = field(init=False)  # the one way a URL is leased and its lease ended
    login: Login | None = None  # the form login (SPEC 13 login-url), set by the spider
    recrawl_now: bool = False  # -a recrawl=yes: a complete crawl is recrawled whatever its period
    # Set by the scheduler when the run would have begun but the crawl was complete and its
    # recrawl not due (another worker completed it meanwhile): what to say; nothing begun.
    not_due: str | None = None

    def __post_init__(self) -> None:
        self.leases = Leases(self.store)

    @classmethod
    def build(
        cls, config: CrawlConfig, *, in_memory: bool = False, worker: str | None = None
    ) -> CrawlContext:
        """The context of a crawl of ``config``; ``in_memory`` keeps a store that no file holds
        (``scrapy check``); ``worker`` names this process in a crawl shared by several."""
        repository = Repository(config.repository)
        store, politeness = open_store(config, repository.root, worker=worker, in_memory=in_memory)
        return cls(
            config=config, rules=UrlRules(config), repository=repository, store=store,
            politeness=politeness, worker=store.worker,
        )  # fmt: skip

    @property
    def frontier(self) -> Frontier:
        return self.store.frontier

    @property
    def documents(self) -> DocumentStore:
        return self.store.documents

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
