"""The traps a crawl learns, for one process of it (SPEC 6 ``learn-traps``): the spider tells
:class:`LearnedTraps` what each page brought (a duplicate, exact or near, or new text), and asks it
whether a link matches a rule learned (:mod:`tarantula.core.traps`). A page counts as no new text
when it is a duplicate, or when its text's fingerprint is within twice ``near-duplicate-distance``
(and one) of the page of the same pattern before it: a calendar's days or a list's repeated pages
differ in a date or a page number, often more than a near-duplicate's few bits. The rules and the
counts are the crawl's store's (:class:`~tarantula.store.TrapStore`), so a resume and every
worker stop at the same rules; a rule another worker learned is read within :data:`REFRESH`
seconds.

Stats: ``tarantula/traps/learned`` (rules this process learned); each link a rule stops is
counted as the filter ``trap-learned``.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from tarantula.core.traps import matched, patterns

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    from tarantula.store import TrapStore

logger = logging.getLogger(__name__)

#: Seconds between two reads of the rules other workers learned.
REFRESH = 1.0


class LearnedTraps:
    """The learned traps as one process sees them (see the module's docstring)."""

    def __init__(self, store: TrapStore, threshold: int, within: int, crawler: Crawler,
                 commit: Callable[[], None]) -> None:  # fmt: skip
        self.store = store
        self.commit = commit
        self.threshold = threshold
        self.within = within
        self.crawler = crawler
        self.rules: frozenset[str] = frozenset()
        self._read = -REFRESH  # read at the first link asked about

    def outcome(self, url: str, duplicate: bool, fingerprint: int | None = None) -> None:
        """The page at ``url`` was a duplicate, exact or near (``duplicate``), or else brought
        new text, unless its ``fingerprint`` is :attr:`within` bits of the page before of the
        same pattern."""
        found = patterns(url)
        if not found:
            return
        learned = self.store.outcome(
            found, url, duplicate, self.threshold, fingerprint, self.within
        )
        if not learned:
            return
        self.commit()  # a rule learned is kept at once: a kill does not lose it
        taught = self.store.rules()
        self.rules = frozenset(taught)
        for pattern in learned:
            self.crawler.stats.inc_value("tarantula/traps/learned")
            logger.warning(
                "Learned a trap: %d pages in a row like %s brought duplicates (%s); links like it"
                " are not fetched from now on",
                self.threshold, pattern, ", ".join(taught.get(pattern, ())),
            )  # fmt: skip

    def stops(self, url: str) -> str | None:
        """The learned rule that stops ``url``, a link found on a page; None when none does."""
        now = time.monotonic()
        if now - self._read >= REFRESH:
            self.rules, self._read = frozenset(self.store.rules()), now
        return matched(url, self.rules)
