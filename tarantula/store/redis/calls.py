"""How a shared frontier's calls reach Redis, a part of
:class:`~tarantula.store.redis.frontier.RedisFrontier`: the links' pushes not sent yet and the
commands held (a stored page's record and acknowledgement) go first in the worker's next round
trip, and leases taken ahead ride on it, kept for later calls of the scheduler (SPEC 9)."""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from collections import Counter, deque
from collections.abc import Callable
from itertools import chain
from typing import TYPE_CHECKING, Any

from tarantula.store.redis.codec import Record, url_id
from tarantula.store.redis.transport import Batch, Held, Scripts, Taker

logger = logging.getLogger(__name__)

#: Links' pushes held for the next call to Redis before they are sent on their own.
MAX_UNSENT = 256
#: Batches held for the next call to Redis (:meth:`Calls.hold`) before they are sent on their own.
MAX_HELD = 64

#: A lease taken ahead is used within this part of the lease timeout, or given back.
AHEAD_PART = 0.25


def pushed(replies: list[Any]) -> list[bool]:
    """Whether each push was queued, from the replies of the script calls that carried them."""
    return [bool(queued) for reply in replies for queued in reply]


class Calls:
    """The round trips of one worker's frontier under ``prefix``: what it holds for the next,
    and the leases it took ahead (``ahead`` at most; ``ahead_with_lease``: a lease asked now
    takes them, see :class:`~tarantula.store.redis.frontier.RedisFrontier`)."""

    scripts: Scripts
    keys: list[str]
    prefix: str
    worker: str
    dfs: bool
    _offset: float | None  # server time - time.monotonic()

    def _start_calls(self, lease_timeout: float, ahead: int, ahead_with_lease: bool) -> None:
        """Nothing held, no lease taken ahead (the frontier's ``__init__`` calls this)."""
        self._unsent: list[list[Any]] = []  # pushes of links, sent with the next call (push)
        # Commands sent with the next call, each batch's with what takes its replies (hold)
        self._held: list[Held] = []
        self.ahead = ahead
        self.ahead_with_lease = ahead_with_lease
        # The last lease asked now found nothing due: the next takes none ahead (they would
        # find nothing either, each a script call of its own).
        self._dry = False
        self.ahead_for = lease_timeout * AHEAD_PART  # a lease taken ahead is used within this
        self._ahead: deque[tuple[float, list[Any]]] = deque()  # leases taken ahead: when, reply
        self.refused = 0  # of the pushes, how many Redis refused (their URLs were seen)
        # Each lease call's token: a call sent again after a lost reply gets the lease the first
        # sending took (lease.lua). Unique to this process, so a worker started again under the
        # same name never matches its predecessor's.
        self._tokens = itertools.count(1)
        self._process = secrets.token_hex(4)

    def _token(self) -> str:
        """A lease call's token (lease.lua): a call sent again, after its reply was lost or after
        Redis lost the scripts in a restart, keeps its token, and gets the lease it took."""
        return f"{self._process}.{next(self._tokens)}"

    if TYPE_CHECKING:

        def ack(self, url: str, outcome: str, *, batch: Batch | None = None) -> None: ...

        def drop_host(self, host: str, chunk: int = 1000) -> int: ...

    def _run(self, name: str, *args: Any, batch: Batch | None = None) -> Any:
        """Run script ``name`` (or add it to ``batch``, when given); the pushes not sent yet and
        the commands held go first, in the same round trip (:meth:`execute`)."""
        if batch is not None:
            self.scripts.add(batch, name, self.keys, [self.prefix, *args])
            return None
        if not self._unsent and not self._held:
            return self.scripts.run(name, self.keys, [self.prefix, *args])
        return self.execute(lambda b: self.scripts.add(b, name, self.keys, [self.prefix, *args]))[0]

    def execute(self, fill: Callable[[Batch], object]) -> list[Any]:
        """The replies to a batch filled by ``fill`` (any scripts of the process, see
        :class:`Scripts`), sent after the links' pushes not sent yet and the commands held
        (:meth:`hold`), in the same round trip; the replies of those go where they belong."""
        held, self._held = self._held, []
        if self._unsent:  # links before any ack: the crawl never looks over while they wait
            pushes = Batch()
            self.add_pushes(pushes, self._unsent)
            self._unsent = []
            held.insert(0, (pushes.commands, self.pushes_sent))
        return self.scripts.execute_after(held, fill)

    def hold(self, fill: Callable[[Batch], object], take: Taker) -> None:
        """Send the commands ``fill`` adds to a batch (now) with this worker's next round trip to
        Redis, before that call's own, or at the latest at :meth:`flush` (which the worker's
        tick calls every second); ``take`` gets their replies then. A stored page's record and
        ack go this way, with the next page's content claim: one round trip a page, not two. A
        worker killed meanwhile loses them as it would a page it had not stored yet: its lease
        runs out and the URL is fetched again."""
        batch = Batch()
        fill(batch)
        self._held.append((batch.commands, take))
        if len(self._held) >= MAX_HELD:
            self.flush()

    def hold_ack(self, url: str, outcome: str) -> None:
        """:meth:`ack` with this worker's next round trip to Redis (:meth:`hold`)."""
        self.hold(lambda batch: self.ack(url, outcome, batch=batch), lambda replies: None)

    def add_pushes(self, batch: Batch, pushes: list[list[Any]]) -> None:
        """Add ``pushes`` (the arguments of each) to ``batch``: one script call for all of them,
        or nothing when there are none. Its reply is a list, a 0 or 1 a push (:func:`pushed`)."""
        if pushes:
            self.scripts.add(batch, "push", self.keys, [self.prefix, *chain.from_iterable(pushes)])

    def pushes_sent(self, replies: list[Any]) -> None:
        """Count the pushes Redis refused: another worker had queued their URLs meanwhile.
        ``replies`` are those of the commands :meth:`add_pushes` added (none, or one)."""
        self.refused += sum(1 for queued in pushed(replies) if not queued)

    def add_lease_ahead(self, batch: Batch, added: int, token: str) -> bool:
        """Add a lease taken ahead to ``batch`` (a page's content claim or store), to be kept for
        a later call of the scheduler (:meth:`leased_ahead` takes the reply): unless this worker
        holds :attr:`ahead` taken ahead already, counting the ``added`` to the batch before. Such
        a lease does not take the last slot that is free now (the only due host's last): that
        one is for a worker with a thread free now. ``token``: the call's (:meth:`_token`), the
        same each time a batch is filled again. Returns whether it added one."""
        if len(self._ahead) + added >= self.ahead:
            return False
        self.scripts.add(batch, "lease", self.keys, [self.prefix, self.worker, "1", token])
        return True

    def execute_leasing_ahead(self, fill: Callable[[Batch], object], leases: int = 1) -> list[Any]:
        """:meth:`execute`, with up to ``leases`` leases taken ahead after ``fill``'s commands
        (:meth:`add_lease_ahead`; one a page whose content is claimed), whose replies are kept
        (:meth:`leased_ahead`), not returned."""
        added = 0
        tokens = [self._token() for _ in range(leases)]  # the same if the batch is filled again

        def fill_and_lease(batch: Batch) -> None:
            nonlocal added
            added = 0
            fill(batch)
            while added < leases and self.add_lease_ahead(batch, added, tokens[added]):
                added += 1

        replies = self.execute(fill_and_lease)
        if added:
            for reply in replies[-added:]:
                self.leased_ahead(reply)
            del replies[-added:]
        return replies

    def leased_ahead(self, reply: list[Any]) -> None:
        """Keep the reply of a lease :meth:`add_lease_ahead` added, if it leased a URL. A dropped
        host it met is dropped now (Redis took it out of the hosts to lease from: its queued URLs
        must not wait for a call that may never come). An idle or spent-budget answer is stale
        by the next call, which asks again."""
        self._name_reaped(reply)
        if reply[0] is not None:
            self._ahead.append((time.monotonic(), reply))
        elif reply[2] == b"dropped":
            self.drop_host(reply[3].decode())

    def _lease_reply(self) -> tuple[Any, float]:
        """The reply of the oldest lease taken ahead, while it is young enough, else of a lease
        now."""
        while self._ahead:
            taken, reply = self._ahead.popleft()
            if time.monotonic() - taken < self.ahead_for:
                return reply, float(reply[1])
            # Too old to trust its deadline: back to its queue (if still this worker's).
            url = Record.decode(reply[0], self.dfs).entry.url
            self._run("give_back", url_id(url)[0], "0", int(reply[4]), self.worker, reply[1])
        token = self._token()  # the same if the batch is filled again (scripts loaded again)
        reply, server = self._timed_batch(
            lambda batch: self._run("lease", self.worker, "0", token, batch=batch),
            self.ahead if self.ahead_with_lease and not self._dry else 0,
        )
        self._dry = reply[0] is None
        self._name_reaped(reply)
        return reply, server

    def _name_reaped(self, reply: list[Any]) -> None:
        """Name the workers whose expired leases a lease of this worker took back (SPEC 12): a
        worker that stopped answering (killed, or paused past ``lease-timeout``)."""
        for owner, count in Counter(reply[5] if len(reply) > 5 and reply[5] else ()).items():
            urls = f"{count} URL" + ("" if count == 1 else "s")
            if owner.decode() == self.worker:
                # This worker's own, which nothing here held: a lease whose reply was lost when
                # Redis went away, its call not sent again (a call sent again with its token gets
                # the lease it took, lease.lua).
                logger.warning(
                    "Worker %s's lease on %s, its reply lost while Redis was away, ran out: "
                    "queued again", self.worker, urls,
                )  # fmt: skip
                continue
            logger.warning(
                "Worker %s stopped answering: its lease on %s ran out, queued again",
                owner.decode(), urls,
            )  # fmt: skip

    def flush(self) -> None:
        """Send the pushes not sent yet and the commands held now."""
        if self._unsent or self._held:
            self.execute(lambda batch: None)

    def _timed_batch(self, fill: Callable[[Batch], object], ahead: int = 0) -> tuple[Any, float]:
        """The reply to the one script ``fill`` adds, which answers with the server time, sent with
        up to ``ahead`` leases taken ahead (:meth:`execute_leasing_ahead`); keep the clock offset
        up to date."""
        before = time.monotonic()
        reply = self.execute_leasing_ahead(fill, ahead)[0]
        after = time.monotonic()
        server = float(reply[1])
        # The server read its clock between the two: the midpoint is off by half a round trip
        # at most, which only shifts when the scheduler asks again, never what Redis decides.
        self._offset = server - (before + after) / 2
        return reply, server
