"""An exclusive lock on a file of a repository's state folder, which the processes writing one
folder (the workers of a crawl shared through Redis) take turns with: ``browse/``'s passes and the
report. ``flock`` locks are released by the kernel when their holder dies, so a killed worker
never leaves one held."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def folder_lock(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the lock of file ``path`` (made when missing) for the block; the block gets whether
    it holds it: without ``wait``, False at once when another process does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
