"""What ``scrapy merge CONF FOLDER...`` does: combine the repository folders of a crawl shared through Redis
into the configured repository (SPEC 9).

Workers with repository folders of their own (on machines of their own, each running the same
configuration file) each hold a part of the crawl: a document's index record is in the record
file of the worker that stored it, in the folder holding its copy, and Redis names that file's
writer (:mod:`tarantula.store.redis.records`). For each FOLDER
(its ``.tarantula/folder-id`` names it), merge

- puts each of its documents' copies into the repository at the same path: a hard link, or a
  copy when the two are on different file systems; a file already there with the recorded
  content stays. The FOLDER's files are never changed or moved;
- then writes those records to the repository's record file (``merge.db``) and has Redis name
  it their writer, a batch at a time once the batch's files are on disk (a merge cut short leaves
  each record with a folder that holds its copy), so that a resume, a recrawl and a rewrite of the
  repository's outputs see them all;
- lists its duplicates in the repository's ``duplicates.tsv`` instead, copies its WARC files into
  ``warc/`` (a name the repository has for another file gets the folder id) and adds its WARC
  captures to the repository's, which later revisit records refer to;

and at last writes the repository's ``index.txt`` and ``duplicates.tsv`` from its record files and
Redis, each stored document once. The repository may itself be one of the FOLDERs. Merging again
changes nothing: the records are the repository's already.

It prints one line per record whose copy is missing (that record stays with its folder), a
summary on stderr, and exits 0, or 1 when copies were missing. It exits 2, changing nothing, for
a bad configuration file, a configuration without ``<distributed-options> redis``, Redis
unreachable, no crawl of the configuration in Redis, a FOLDER that is not a folder of a shared
crawl, or workers still at work (their outputs are being written).
"""

from __future__ import annotations

import errno
import filecmp
import hashlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from tarantula.core.layout import (
    CAPTURES_NAME,
    FOLDER_ID_NAME,
    STATE_FOLDER,
    WARC_FOLDER,
    folder_id_of,
    own_name,
    read_folder_id,
)
from tarantula.core.mirror import _TEMPORARY_PREFIX
from tarantula.core.repository import Repository
from tarantula.store.contract import Merged, StoreUnavailable
from tarantula.store.files import sync_filesystem
from tarantula.store.redis.shared import crawl_id, read_crawl

if TYPE_CHECKING:
    from redis import Redis

    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import StoredDocument
    from tarantula.store.redis.documents import RedisDocumentStore
    from tarantula.store.redis.requisites import RedisRequisites

#: The name of the record file ``scrapy merge`` writes the merged records to, in the repository.
MERGE_WRITER = "merge"

#: How a file came to be in the repository.
LINKED, COPIED, IN_PLACE = "linked", "copied", "in place"

#: Errors of ``os.link`` that a copy gets around: another file system, or one without hard links.
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}


class MergeError(StoreUnavailable):
    """A reason to merge nothing (exit status 2)."""


def place(source: Path, target: Path, md5: str | None = None) -> str:
    """Put the file ``source`` at ``target`` (folders made): a hard link, else a copy, through a
    temporary name that a resume's sweep removes if a crash leaves it (:mod:`tarantula.core.mirror`).
    Returns :data:`LINKED`, :data:`COPIED`, or :data:`IN_PLACE` when ``target`` is ``source`` or
    already holds content of MD5 ``md5``. ``source`` is never changed."""
    if target.is_file() and (
        os.path.samefile(source, target) or (md5 is not None and file_md5(target) == md5)
    ):
        return IN_PLACE
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(
        f"{_TEMPORARY_PREFIX}{target.name[:64]}.{secrets.token_hex(8)}.tmp"
    )
    try:
        try:
            os.link(source, temporary)
            how = LINKED
        except OSError as exc:
            if exc.errno not in _NO_LINK:
                raise
            shutil.copy2(source, temporary)
            how = COPIED
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return how


def file_md5(path: Path) -> str | None:
    """The MD5 of the file at ``path``, None when it cannot be read."""
    try:
        with open(path, "rb", buffering=0) as stream:
            return hashlib.file_digest(stream, "md5").hexdigest()
    except OSError:
        return None


def mirror_path_problem(path: str) -> str | None:
    """Why a record's mirror ``path`` cannot be merged (it leaves the repository, or names one of
    its own files), None when it can.

    >>> mirror_path_problem("h.test/a/index.html") is None
    True
    >>> mirror_path_problem("../x"), mirror_path_problem("index.txt")
    ('not inside the repository', "one of the repository's own names")
    """
    parts = PurePosixPath(path).parts
    if not parts or PurePosixPath(path).is_absolute() or ".." in parts or "." in parts:
        return "not inside the repository"
    if own_name(parts[0]):
        return "one of the repository's own names"
    return None


def folder_ids(folders: list[Path]) -> list[tuple[Path, str]]:
    """Each FOLDER with its folder id (the first of folders sharing one); :class:`MergeError`
    names a FOLDER that is missing or that no worker of a shared crawl wrote."""
    found: dict[str, Path] = {}
    for folder in folders:
        if not folder.is_dir():
            raise MergeError(f"{folder}: no such folder")
        try:
            folder_id = read_folder_id(folder)
        except (OSError, ValueError) as exc:
            raise MergeError(f"{folder}: {exc}") from None
        if folder_id is None:
            raise MergeError(
                f"{folder}: not a repository folder of a shared crawl "
                f"({folder / STATE_FOLDER / FOLDER_ID_NAME} is missing)"
            )
        found.setdefault(folder_id, folder)
    return [(folder, folder_id) for folder_id, folder in found.items()]


def merge(client: Redis, prefix: str, target: Path, folders: list[tuple[Path, str]],
          merged: Merged, chunk: int = 500) -> Iterator[str]:  # fmt: skip
    """Merge ``folders`` (folder, folder id) of the crawl under ``prefix`` into the repository
    ``target`` (see the module's docstring); yields one line per record not merged (its copy is
    missing or could not be placed), which stays with its folder."""
    from tarantula.store.redis.documents import MERGED_INTO, RedisDocumentStore, register_writer
    from tarantula.store.redis.requisites import RedisRequisites
    from tarantula.store.redis.runs import last_run

    last = last_run(client, prefix)
    target.mkdir(parents=True, exist_ok=True)
    target_id = folder_id_of(target)
    records = register_writer(client, prefix, target, MERGE_WRITER, target_id)
    documents = RedisDocumentStore(client, prefix, target_id, records=records, root=target)
    for folder, folder_id in folders:
        merged.folders += 1
        if folder_id == target_id:
            continue  # the repository itself (or a folder sharing its id)
        source = RedisDocumentStore(client, prefix, folder_id, root=folder)
        # First: a folder cut short by a stop verifies against both folders' records.
        client.hset(prefix + MERGED_INTO, folder_id, target_id)
        yield from _merge_documents(source, folder, target, documents, merged, chunk)
        yield from _merge_requisites(RedisRequisites(client, prefix, folder_id), folder, target,
                                     target_id, merged)  # fmt: skip
        merged.duplicates += source.move_duplicates_to(target_id, chunk)
        merged.warc_files += merge_warc(folder / WARC_FOLDER, target / WARC_FOLDER, folder_id)
        merge_captures(folder / STATE_FOLDER / CAPTURES_NAME, target / STATE_FOLDER / CAPTURES_NAME)
    records.close()
    documents.generation = last.generation if last is not None else 1
    repository = Repository(target)
    documents.index_path = repository.index
    documents.duplicates_path = repository.duplicates
    documents.near_path = repository.near_duplicates
    merged.documents = documents.rewrite_outputs()


def _merge_documents(source: RedisDocumentStore, folder: Path, target: Path,
                     documents: RedisDocumentStore, merged: Merged,
                     chunk: int) -> Iterator[str]:  # fmt: skip
    batch: list[StoredDocument] = []
    wrote = False

    def flush() -> None:
        nonlocal wrote
        if wrote:  # the copies are on disk before a record says they are here
            sync_filesystem(target)
            wrote = False
        if batch:
            merged.moved += source.move_to(documents, batch)
            batch.clear()

    for doc in source.documents(chunk):
        copy = folder / doc.path
        problem = mirror_path_problem(doc.path)
        if problem is None and not copy.is_file():
            problem = "missing"
        if problem is None:
            try:
                how = place(copy, target / doc.path, doc.md5)
            except OSError as exc:
                problem = f"not copied: {exc.strerror or exc}"
        if problem is not None:
            merged.failed += 1
            yield f"{copy}: {problem} (stored for {doc.url}); not merged"
            continue
        if how != IN_PLACE:
            wrote = True
            merged.linked += how == LINKED
            merged.copied += how == COPIED
        batch.append(doc)
        if len(batch) >= chunk:
            flush()
    flush()


def _merge_requisites(source: RedisRequisites, folder: Path, target: Path, target_id: str,
                      merged: Merged) -> Iterator[str]:  # fmt: skip
    """Place the page requisites' copies of ``folder`` in ``target`` (as documents' are), then
    record them there."""
    moved: list[str] = []
    for requisite in source.fetched():
        path = requisite.path or ""
        copy = folder / path
        problem = mirror_path_problem(path) or (None if copy.is_file() else "missing")
        if problem is None:
            try:
                how = place(copy, target / path, requisite.md5)
            except OSError as exc:
                problem = f"not copied: {exc.strerror or exc}"
        if problem is not None:
            yield f"{copy}: {problem} (page requisite {requisite.url}); not merged"
            continue
        merged.linked += how == LINKED
        merged.copied += how == COPIED
        moved.append(requisite.url)
    if moved:
        sync_filesystem(target)
        source.move_to(target_id, moved)


def merge_warc(source: Path, target: Path, folder_id: str) -> int:
    """Copy the files of ``source`` (a folder's ``warc/``) into ``target``; a file whose content
    is there already (merged before) is not copied again, and one whose name the target has for
    other content gets the folder id in its name. Returns how many were copied."""
    if not source.is_dir():
        return 0
    placed = 0
    for path in sorted(p for p in source.iterdir() if p.is_file()):
        if _copy_in(path, target) is not None:
            continue
        name = path.name
        base, dot, extension = name.partition(".")
        serial = 1
        while (target / name).exists():
            suffix = folder_id if serial == 1 else f"{folder_id}-{serial}"
            name = f"{base}-{suffix}{dot}{extension}"
            serial += 1
        place(path, target / name)
        placed += 1
    return placed


def _copy_in(path: Path, folder: Path) -> Path | None:
    """A file of ``folder`` with the content of ``path``, if there is one."""
    if not folder.is_dir():
        return None
    size = path.stat().st_size
    for other in folder.iterdir():
        if not other.is_file() or other.stat().st_size != size:
            continue
        if os.path.samefile(path, other) or filecmp.cmp(path, other, shallow=False):
            return other
    return None


def merge_captures(source: Path, target: Path) -> None:
    """Add the WARC captures of ``source`` to ``target``: each URL's latest capture wins (lines
    ``url<TAB>date<TAB>record-id<TAB>payload-digest``, dates in ISO form; a line cut short by a
    kill is left out, as :class:`tarantula.core.warc.Captures` reads them)."""
    if not source.is_file():
        return
    latest: dict[str, str] = {}  # URL -> date, in the target
    if target.is_file():
        latest = {url: date for url, date, _ in _captures(target)}
    lines = [line for url, date, line in _captures(source) if date > latest.get(url, "")]
    if not lines:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "ab") as out:
        if out.tell() and not _ends_with_newline(target):
            out.write(b"\n")
        out.writelines(lines)


def _captures(path: Path) -> Iterator[tuple[str, str, bytes]]:
    with open(path, "rb") as stream:
        for line in stream:
            fields = line.split(b"\t")
            if line.endswith(b"\n") and len(fields) == 4:
                yield fields[0].decode("utf-8", "replace"), fields[1].decode("latin-1"), line


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as stream:
        stream.seek(-1, os.SEEK_END)
        return stream.read(1) == b"\n"


def open_crawl(config: CrawlConfig) -> tuple[Redis, str]:
    """A client of ``config``'s Redis and the prefix of its crawl's keys; :class:`MergeError` when
    there is no crawl of it there or workers are at work on it."""
    from tarantula.store.redis.runs import Workers, last_run

    client, prefix = read_crawl(config)
    try:
        if last_run(client, prefix) is None:
            raise MergeError(
                f"Redis at {config.redis} holds no crawl {crawl_id(config)} (the id of a crawl is its "
                f"configuration file's name and a digest of its starting points)"
            )
        live = Workers(client, prefix, "").live()
        if live:
            raise MergeError(
                f"workers are at work on the crawl ({', '.join(sorted(live))}): merge once they "
                f"have stopped"
            )
    except BaseException:
        client.close()
        raise
    return client, prefix


def merge_folders(config: CrawlConfig, folders: list[Path], merged: Merged) -> Iterator[str]:
    """Merge the repository folders ``folders`` of ``config``'s shared crawl into its repository
    (see the module's docstring); yields one line per record not merged. :class:`MergeError`
    (nothing merged) or :class:`~tarantula.store.StoreUnavailable` (stopped: run it again)."""
    from redis import RedisError

    if not config.redis:
        raise MergeError(
            "no <distributed-options> redis: merge combines the folders of a crawl shared "
            "through Redis"
        )
    named = folder_ids(folders)
    client, prefix = open_crawl(config)
    try:
        yield from merge(client, prefix, config.repository, named, merged)
    except RedisError as exc:
        # What was merged before stays consistent (see merge's batches): a second run ends it.
        raise StoreUnavailable(
            f"the merge stopped, Redis at {config.redis} failed ({exc})"
        ) from None
    finally:
        client.close()
