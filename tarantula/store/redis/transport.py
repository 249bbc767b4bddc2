"""Talking to Redis: Lua scripts run by their SHA1, alone or several in one round trip, packed
by hiredis and read straight from the worker's connection (redis-py's pipeline asks
``SCRIPT EXISTS`` before each batch and parses through its generic layers: a round trip and a
third of a call's cost more, on the path of every page)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

from hiredis import pack_command
from redis.exceptions import NoScriptError, ResponseError

from tarantula.compat import send_batch

if TYPE_CHECKING:
    from redis import Redis


#: What takes the replies of commands sent after a while (:meth:`Scripts.execute_after`).
Taker = Callable[[list[Any]], object]
#: Commands held to go with a later round trip, and what takes their replies.
Held = tuple[list[tuple[Any, ...]], Taker]


class Scripts:
    """Lua scripts run by their SHA1, alone or several in one round trip (a :class:`Batch`).

    redis-py's ``Script`` asks ``SCRIPT EXISTS`` before every pipeline that holds one: a second
    round trip each time. Here the scripts of every :class:`Scripts` of the process are loaded
    together instead, when the first is made and whenever Redis answers ``NOSCRIPT`` (it lost
    them in a restart). So either all are there or none is, and a batch that met ``NOSCRIPT`` ran
    none of its scripts: it is sent again, whole.
    """

    _every: ClassVar[dict[str, str]] = {}  # SHA1 -> body, of every script made in the process

    def __init__(self, client: Redis, bodies: dict[str, str]) -> None:
        self.client = client
        self.sha = {
            name: hashlib.sha1(body.encode(), usedforsecurity=False).hexdigest()
            for name, body in bodies.items()
        }
        Scripts._every.update({self.sha[name]: body for name, body in bodies.items()})
        self.load()

    def load(self) -> None:
        pipe = self.client.pipeline(transaction=False)
        for body in Scripts._every.values():
            pipe.script_load(body)
        pipe.execute()

    def add(self, batch: Batch, name: str, keys: list[str], args: list[Any]) -> None:
        """Add script ``name`` to ``batch`` (sent by :meth:`execute`)."""
        batch.evalsha(self.sha[name], len(keys), *keys, *args)

    def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run script ``name`` now."""
        if self.client.connection is not None:  # straight down the connection, as a batch
            return self.execute(lambda batch: self.add(batch, name, keys, args))[0]
        try:
            return self.client.evalsha(self.sha[name], len(keys), *keys, *args)
        except NoScriptError:
            self.load()
            return self.client.evalsha(self.sha[name], len(keys), *keys, *args)

    def execute(self, fill: Callable[[Batch], object]) -> list[Any]:
        """A batch filled by ``fill`` (with :meth:`add` for scripts), sent (:func:`send`)."""
        for again in (False, True):
            batch = Batch()
            fill(batch)
            try:
                return send(self.client, batch)
            except NoScriptError:
                if again:
                    raise
                self.load()
        raise AssertionError("unreachable")

    def execute_after(self, held: list[Held], fill: Callable[[Batch], object]) -> list[Any]:
        """:meth:`execute` for a batch that holds the ``held`` commands first, then those ``fill``
        adds, in one round trip: each held batch's replies go to its taker, ``fill``'s are
        returned."""
        own = 0

        def fill_all(batch: Batch) -> None:
            nonlocal own
            for commands, _ in held:
                batch.commands.extend(commands)
            own = len(batch.commands)
            fill(batch)

        replies = self.execute(fill_all)
        i = 0
        for commands, take in held:
            take(replies[i : i + len(commands)])
            i += len(commands)
        return replies[own:]


class Batch:
    """Commands to send together, in one round trip (:func:`send`)."""

    def __init__(self) -> None:
        self.commands: list[tuple[Any, ...]] = []

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> None:
        self.commands.append(("EVALSHA", sha, numkeys, *keys_and_args))

    def hget(self, name: str, key: str | bytes) -> None:
        self.commands.append(("HGET", name, key))

    def sismember(self, name: str, member: str) -> None:
        self.commands.append(("SISMEMBER", name, member))


def send(client: Redis, batch: Batch) -> list[Any]:
    """The replies to ``batch``'s commands, sent in one round trip; raises the first error reply
    once every reply is read.

    On a client with a connection of its own (``single_connection_client``, as
    :func:`~tarantula.store.redis.shared.connect` makes) the commands go straight down that
    connection with its retry policy; a redis-py pipeline would check a connection out of the pool
    and back, which costs about as much CPU as a second round trip. They are packed by hiredis at
    once, and each reply is read from the connection without the client's reply callbacks (a
    batch holds EVALSHA and HGET only, which have none): the client's own way costs about a third
    more CPU a round trip. Other clients use a pipeline.
    """
    conn = client.connection
    if conn is None:
        pipe = client.pipeline(transaction=False)
        for command in batch.commands:
            pipe.execute_command(*command)
        return cast("list[Any]", pipe.execute())
    return send_batch(client, pack(batch.commands), len(batch.commands), _raise_first_error)


def _raise_first_error(replies: list[Any]) -> None:
    """The connection's retry policy decides: a worker's waits while a node says the cluster is
    down (it ran nothing) and sends the batch again, as after a lost connection; any other error
    reply is raised at once."""
    for reply in replies:
        if isinstance(reply, ResponseError):
            raise reply


def pack(commands: list[tuple[Any, ...]]) -> list[bytes]:
    """``commands`` in the Redis protocol, as one chunk for ``send_packed_command``."""
    return [b"".join([pack_command(command) for command in commands])]
