"""Writing a store's files: lines appended in one write, a file replaced atomically, the mirror's
new files synced to disk before a commit records them."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from pathlib import Path


def append_lines(path: Path | None, lines: list[str]) -> None:
    """Append ``lines`` to ``path`` in one write and clear them.

    One write per batch: a kill leaves the batch whole or absent (short of the kill landing inside
    the system call of a batch that spans memory pages; the next run rewrites the file from the
    state in any case).
    """
    if not lines or path is None:
        return
    data = "".join(lines).encode("utf-8")
    lines.clear()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def write_lines(path: Path, lines: Iterable[str]) -> int:
    """Replace ``path`` atomically with ``lines``; returns how many."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # one per writing process
    count = 0
    with open(temporary, "w", encoding="utf-8", newline="\n") as out:
        for line in lines:
            out.write(line)
            count += 1
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    return count


def sync_filesystem(folder: Path) -> None:
    """Flush the file system that holds ``folder`` to disk (Linux ``syncfs``; ``sync`` elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(folder, os.O_RDONLY)
        try:
            if libc.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        pass
    os.sync()
