"""How a crawl shared through Redis writes a URL for its scripts: its 8-byte hash and seen-set
member, the host-queue member that orders it, and the record of a queued or leased URL (see
:mod:`tarantula.store.redis.frontier` for the layout)."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from tarantula.core.frontier import Entry

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")


def url_id(url: str) -> tuple[bytes, int]:
    """The 8-byte hash of a normalized URL (``SqliteFrontier``'s :func:`url_hash`) and its signed
    integer form, which the seen-set stores.

    >>> h8, n = url_id("http://h.test/")
    >>> len(h8), n == int.from_bytes(h8, "big", signed=True)
    (8, True)
    """
    digest = hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest()
    return digest, int.from_bytes(digest, "big", signed=True)


def seen_bucket(h8: bytes, buckets: int) -> int:
    """The seen-set bucket of a 64-bit hash (a URL's, or a taken path's) among ``buckets``, a power
    of two: its top bits.

    >>> seen_bucket(b"\\xff" * 8, 4096), seen_bucket(b"\\x00" * 8, 4096), seen_bucket(b"\\xff" * 8, 1)
    (4095, 0, 0)
    """
    return int.from_bytes(h8, "big") >> (64 - (buckets.bit_length() - 1))


def order_member(key: bytes, h8: bytes, dfs: bool) -> bytes:
    """A host-queue member: the order key, made prefix-free, then the URL hash.

    >>> from tarantula.core.frontier import dfs_key
    >>> parent = order_member(dfs_key((0, 1)), b"\\xff" * 8, dfs=True)
    >>> child = order_member(dfs_key((0, 1, 0)), b"\\x00" * 8, dfs=True)
    >>> parent < child, order_key(parent, dfs=True) == dfs_key((0, 1))
    (True, True)
    """
    if not dfs:
        if len(key) != 12:
            raise ValueError(f"a bfs key has 12 bytes, not {len(key)}")
        return key + h8
    if len(key) % 4:
        raise ValueError(f"a dfs key has 4 bytes a link position, not {len(key)} bytes")
    return b"".join(b"\x01" + key[i : i + 4] for i in range(0, len(key), 4)) + b"\x00" + h8


def order_key(member: bytes, dfs: bool) -> bytes:
    """The order key of a host-queue member (:func:`order_member` undone)."""
    if not dfs:
        return member[:-8]
    escaped = member[:-9]
    return b"".join(escaped[i + 1 : i + 5] for i in range(0, len(escaped), 5))


def encode_rest(url: str, original: str, extra: str | None) -> bytes:
    """The part of a record only Python reads: URL, original URL (empty: the URL) and extra."""
    parts = (url.encode(), b"" if original == url else original.encode(), (extra or "").encode())
    return b"".join(_U32.pack(len(p)) + p for p in parts)


@dataclass(frozen=True)
class Record:
    """A queued or leased URL as Redis keeps it."""

    entry: Entry
    leased: bool
    attempts: int
    charged: bool

    @classmethod
    def decode(cls, raw: bytes, dfs: bool) -> Record:
        depth = _U32.unpack_from(raw, 3)[0]
        i = 7
        fields: list[bytes] = []
        for size in (_U16, _U16, _U32, _U32, _U32):
            (n,) = size.unpack_from(raw, i)
            i += size.size
            fields.append(raw[i : i + n])
            i += n
        host, member, url, original, extra = fields
        text = url.decode()
        entry = Entry(
            text,
            original.decode() if original else text,
            depth,
            order_key(member, dfs),
            extra.decode() if extra else None,
            host.decode(),
        )
        return cls(entry, raw[0] == 1, raw[1], raw[2] == 1)


@dataclass(frozen=True)
class Lease:
    """What one lease attempt gave: the entry (None: nothing now), the server time it was decided
    at, why nothing was given (``idle``: no host due; ``budget``: the page budget is spent), and
    whether this lease spent the page budget."""

    entry: Entry | None
    server_time: float
    status: str
    charged: bool = False
