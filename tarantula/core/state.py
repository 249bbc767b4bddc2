"""A crawl's runs (SPEC 8): what one run of the crawl command was, and which ends leave the crawl
complete. The run log that records them is a part of the crawl store (:mod:`tarantula.store`)."""

from __future__ import annotations

from dataclasses import dataclass

#: Ends of a run after which the crawl is complete; any other end (a kill, Ctrl-C, the time limit)
#: leaves work to resume.
COMPLETE = frozenset({"finished", "max-page-number"})

#: The end of a run that had nothing left to do but stored nothing and had no answer from any
#: server: its seeds could not be reached (the network was down). The crawl is not complete, and
#: the next run asks for its seeds again (SPEC 8).
UNREACHABLE = "unreachable"

#: The end of a run that found the crawl complete and its recrawl not due when it began (another
#: worker of a shared crawl completed it meanwhile): nothing was begun, nothing is recorded.
NOT_DUE = "recrawl-not-due"


@dataclass(frozen=True)
class Run:
    id: int
    kind: str  # "crawl", "resume" or "recrawl"
    generation: int
    started: float
    ended: float | None
    reason: str | None
    crawl_started: float  # when the crawl this run belongs to began: its first run's start
    #: In a crawl shared through Redis: this worker joined a run another worker began (and still
    #: works in); that worker readied the frontier and the outputs for it.
    joined: bool = False

    @property
    def complete(self) -> bool:
        return self.ended is not None and self.reason in COMPLETE
