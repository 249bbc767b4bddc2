"""A lease's life, in one place (SPEC 8 and 9).

The frontier hands a URL out leased: the URL is this process's until its lease ends, and a crawl
stopped meanwhile (a kill, a dead worker) queues it again at the next start. :class:`Leases` is
the one way a lease starts and ends; nothing else asks the frontier for a lease or acknowledges
one. A lease the scheduler took ends exactly once, in one of these ways:

- **stored** (:meth:`Leases.stored`, the index pipeline): the store records the document and
  acknowledges its URL in one commit;
- **done with an outcome** (:meth:`Leases.end`): a failure (the spider's errback), a duplicate,
  not accepted, unchanged in a recrawl, a redirect's source, over ``max-page-number``, a copy that
  cannot be stored, a page requisite recorded, an error in Tarantula's own code;
- **queued again** (:meth:`Leases.requeue`, the scheduler): a retry, in its old place.

A second end of the same lease is not passed on (an error signal after a pipeline ended it, for
instance): it is counted, as is a lease still out when a crawl finishes, which would be a URL the
crawl forgot; the scheduler puts both counts in the stats (``tarantula/leases/ended-unheld``,
``tarantula/leases/unended``), and the tests' crawls fail on either.

The end of a download is not the end of its lease: the politeness middleware releases the host's
slot as soon as the answer is in (:meth:`tarantula.core.politeness.Politeness.release`), while the
URL stays leased until its document is stored. Leases a shared frontier takes ahead of need are the
frontier's own until it hands them out.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tarantula.core.documents import StoredDocument
    from tarantula.core.frontier import Entry, Gate
    from tarantula.store.contract import CrawlStore

logger = logging.getLogger(__name__)


class Leases:
    """The leases this process holds, from the frontier's hand-out to their end."""

    def __init__(self, store: CrawlStore) -> None:
        self.store = store
        self.frontier = store.frontier
        #: Leased URL -> how many of its hand-outs are out (more than one only when a shared
        #: frontier's lease ran out and came back to this process while the first was in flight).
        self._held: dict[str, int] = {}
        #: Ends asked for leases this process does not hold (ended already, or never taken).
        self.ended_unheld = 0

    def take(self, now: float = 0.0, gate: Gate | None = None) -> Entry | None:
        """The next URL the frontier hands out among the hosts ``gate`` lets go at ``now``,
        leased to this process; None when no host may go now or nothing is queued."""
        entry = self.frontier.lease(now, gate)
        if entry is not None:
            self._held[entry.url] = self._held.get(entry.url, 0) + 1
        return entry

    def end(self, url: str | None, outcome: str) -> None:
        """The leased ``url`` is done, not stored, for ``outcome``."""
        if self._let_go(url):
            assert url is not None
            self.store.ended(url, outcome)  # first: the lease still tells the URL's depth
            self.frontier.ack(url, outcome)

    def stored(self, doc: StoredDocument) -> None:
        """The leased URL's document is stored: the store keeps its record and acknowledges the
        URL together. A document is kept even if its lease was ended already."""
        self._let_go(doc.url)
        self.store.stored(doc)

    def requeue(self, url: str, original: str, depth: int, key: bytes | None = None,
                extra: str | None = None) -> None:  # fmt: skip
        """Queue ``url`` again in its old place (a retry): its lease, if any, ends. A URL this
        process does not hold may be queued this way too (a seed asked for again)."""
        self._held.pop(url, None)
        self.frontier.requeue(url, original, depth, key, extra)

    def extend(self, url: str, seconds: float) -> None:
        """Keep the lease on ``url`` for ``seconds`` more (a long rendering), where leases expire."""
        if url in self._held:
            self.frontier.extend(url, seconds)

    def out(self) -> int:
        """How many leases this process holds."""
        return sum(self._held.values())

    def _let_go(self, url: str | None) -> bool:
        if url is None:
            return False
        count = self._held.get(url)
        if count is not None:
            if count > 1:
                self._held[url] = count - 1
            else:
                del self._held[url]
            return True
        self.ended_unheld += 1
        logger.debug("The lease of %s is not held (ended already?)", url)
        return False
