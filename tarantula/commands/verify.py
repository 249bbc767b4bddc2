"""``scrapy verify CONF``: check that a crawl's repository is whole (SPEC 11).

It reads the crawl's store, without changing it (:func:`tarantula.store.folder_documents`): the
documents whose copies are in the repository folder (for a crawl shared through Redis, those of
the folder's ``.tarantula/folder-id``: whose copies its workers wrote, or that ``scrapy merge``
brought in). It checks that

- every stored document has its file in the mirror, and the file's content MD5 is the one the
  state recorded when it was stored;
- so does every page requisite kept (``page-requisites``, not in the index);
- no file of the mirror lacks a stored document or requisite (the repository's own files aside:
  :func:`tarantula.core.layout.own_name`; a temporary file a killed run left is reported);
- ``index.txt`` holds one record per stored document and nothing else;
- with ``browsable``, ``browse/`` holds a copy of every stored document and nothing else, and
  every relative link of its pages and style sheets leads to a file in it, and none of them
  loads anything from the network when opened (an image, a style sheet, a script, a frame left as
  an absolute URL: :func:`tarantula.core.browse.network_loads`), one line for each such page;
- with ``warc``, every file under ``warc/`` reads to its end: each gzip member is complete
  (``warcio check`` does not see a member cut short) and each record holds all its bytes.

It prints one line per problem, ``<where>: <what>`` (a path of the repository, or ``index.txt:<line>``),
a summary on stderr, and exits 0 when there is no problem, 1 otherwise (2 for a bad configuration
file, or a store that does not answer). Files are hashed by a pool of threads and the pages of
``browse/`` read by a pool of processes (``--jobs``, one per CPU by default).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from tarantula.commands import load_or_report, tell
from tarantula.core.browse import (
    COPY,
    browse_name,
    decode_page,
    kind_of,
    link_target,
    network_loads,
    page_links,
)
from tarantula.core.browse import record_fields as _record_fields
from tarantula.core.config import CrawlConfig
from tarantula.core.document import codec_for_label
from tarantula.core.layout import (
    BROWSE_NAME,
    own_name,
)
from tarantula.core.repository import Repository
from tarantula.core.urls import UrlRejected, normalize_url
from tarantula.store import StoreUnavailable, folder_documents, folder_requisites, url_requisite

if TYPE_CHECKING:
    import argparse

#: Bytes read at a time from a WARC file.
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Stored:
    url: str
    path: str
    md5: str
    kind: str  # how its browse copy is made (tarantula.core.browse.kind_of)
    codec: str | None


@dataclass
class Tally:
    """What was checked, for the summary line."""

    documents: int = 0
    requisites: int = 0
    files: int = 0
    browse_files: int = 0
    links: int = 0
    warc_files: int = 0
    problems: int = 0
    refused: int = 0  # failed requisites: named, not problems
    seconds: float = field(default=0.0)

    def summary(self, root: Path) -> str:
        """
        >>> Tally(documents=1, files=1, problems=1).summary(Path("r"))
        'Verified r: 1 document, 1 file: 1 problem (0.0 s)'
        >>> print(Tally(documents=2, files=3, browse_files=3, links=1, refused=1).summary(Path("r")))
        Verified r: 2 documents, 3 files, 3 browse files (1 link): no problems; 1 failed page \
requisite, named above (0.0 s)
        """
        parts = [counted(self.documents, "document"), counted(self.files, "file")]
        if self.requisites:
            parts.insert(1, counted(self.requisites, "page requisite"))
        if self.browse_files:
            parts.append(f"{counted(self.browse_files, 'browse file')} "
                         f"({counted(self.links, 'link')})")  # fmt: skip
        if self.warc_files:
            parts.append(counted(self.warc_files, "WARC file"))
        verdict = counted(self.problems, "problem") if self.problems else "no problems"
        if self.refused:
            verdict += f"; {counted(self.refused, 'failed page requisite')}, named above"
        return f"Verified {root}: {', '.join(parts)}: {verdict} ({self.seconds:.1f} s)"


def counted(n: int, thing: str) -> str:
    """
    >>> counted(1, "problem"), counted(2, "problem"), counted(0, "WARC file")
    ('1 problem', '2 problems', '0 WARC files')
    """
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


class Refused(str):
    """A line of verify's that names a page requisite the server refused (a 404, a robots.txt):
    a failed requisite, not a problem of the repository (SPEC 11)."""


def verify(config: CrawlConfig, tally: Tally | None = None, jobs: int = 1) -> Iterator[str]:
    """The problems of the repository of ``config``, one line each (see the module docstring),
    with ``jobs`` processes reading the pages of ``browse/`` (and as many threads, at least 4,
    hashing files)."""
    tally = tally if tally is not None else Tally()
    started = time.monotonic()
    repository = Repository(config.repository)
    documents = read_state(config, repository)
    if isinstance(documents, str):
        yield documents
        tally.problems += 1
        return
    tally.documents = len(documents)
    requisites = read_requisites(config, repository, documents)
    tally.requisites = len(requisites)
    for problem in _all_checks(config, repository, documents, requisites, tally, max(1, jobs)):
        if isinstance(problem, Refused):
            tally.refused += 1
        else:
            tally.problems += 1
        yield problem
    tally.seconds = time.monotonic() - started


def _all_checks(config: CrawlConfig, repository: Repository, documents: dict[str, Stored],
                requisites: dict[str, Stored], tally: Tally, jobs: int) -> Iterator[str]:  # fmt: skip
    yield from check_index(repository.index, documents)
    files = list_files(repository.root, skip=own_name)
    tally.files = len(files)
    kept = documents | requisites
    # Page requisites whose copies another folder of a crawl shared through Redis holds: what this
    # folder's pages load from them is no network load, and a copy of one left here (a recrawl
    # fetched it again into the other folder) no stray file; scrapy merge takes the other's.
    others = folder_requisites(config, repository.root, others=True)
    held = {r.path for r in others if r.path}
    with ThreadPoolExecutor(max(4, jobs)) as threads:  # hashing waits on the disk, not the GIL
        yield from check_mirror(repository.root, kept, files - held, threads.map)
    if config.browsable:
        browse = repository.root / BROWSE_NAME
        browse_files = list_files(browse)
        tally.browse_files = len(browse_files)
        held_copies = {browse_name(r.path, kind_of(r.type)) for r in others if r.path}
        yield from check_browse(browse, kept, browse_files, tally, jobs,
                                {r.url for r in others}, held_copies,
                                lambda url: refusal(config, url))  # fmt: skip
    if config.warc:
        yield from check_warc(repository.root / "warc", tally)


def refusal(config: CrawlConfig, link: str) -> str | None:
    """How the server refused the page requisite at ``link`` (absolute, as a page loads it) when
    the crawl asked for it and got none (``http-404``, ``robots``, ...); None otherwise."""
    try:
        url = normalize_url(link if link[:2] != "//" else "http:" + link)
    except UrlRejected:
        return None
    requisite = url_requisite(config, url)
    if requisite is None or requisite.path is not None or requisite.outcome is None:
        return None
    # An HTTP error, or a rule (robots.txt, the reject list) that kept the crawl from asking: the
    # site's answer or the user's choice. A network fault (no answer) is not one: a later crawl
    # may get the file, and until then the page reaches the network.
    outcome = requisite.outcome
    return outcome if outcome.startswith("http-") or outcome in _REFUSALS else None


#: Outcomes of a page requisite that the crawl did not get because it was told no.
_REFUSALS = frozenset({"filtered", "robots"})


def read_state(config: CrawlConfig, repository: Repository) -> dict[str, Stored] | str:
    """The stored documents of ``repository`` by URL (from its crawl's store), or the one problem
    that leaves nothing to check: no crawl there. :class:`~tarantula.store.StoreUnavailable` when
    the store does not answer."""
    found = folder_documents(config, repository.root)
    if isinstance(found, str):
        return found
    return {doc.url: _stored(doc.url, doc.path, doc.md5, doc.record) for doc in found}


def read_requisites(config: CrawlConfig, repository: Repository,
                    documents: dict[str, Stored]) -> dict[str, Stored]:  # fmt: skip
    """The page requisites kept in ``repository`` by URL, but those whose copy is a document's."""
    paths = {doc.path for doc in documents.values()}
    return {
        req.url: Stored(
            req.url, req.path, req.md5 or "", kind_of(req.type), codec_for_label(req.encoding)
        )
        for req in folder_requisites(config, repository.root)
        if req.path is not None and req.url not in documents and req.path not in paths
    }


def _stored(url: str, path: str, md5: str, first_line: str) -> Stored:
    encoding, doc_type = _record_fields(first_line)
    return Stored(url, path, md5, kind_of(doc_type), codec_for_label(encoding))


def list_files(folder: Path, skip: Callable[[str], bool] = lambda name: False) -> set[str]:
    """Every file below ``folder`` (symbolic links included), as POSIX paths relative to it; top
    level names for which ``skip`` says yes left out."""
    found: set[str] = set()
    stack = [(str(folder), "")]
    while stack:
        where, prefix = stack.pop()
        try:
            entries = list(os.scandir(where))
        except FileNotFoundError:
            continue
        for entry in entries:
            if not prefix and skip(entry.name):
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, f"{prefix}{entry.name}/"))
            else:
                found.add(prefix + entry.name)
    return found


def check_index(index: Path, documents: dict[str, Stored]) -> Iterator[str]:
    """One record in ``index.txt`` per stored document, and nothing else."""
    listed: set[str] = set()
    try:
        stream = open(index, encoding="utf-8", errors="replace", newline="\n")  # noqa: SIM115
    except FileNotFoundError:
        yield f"{index.name}: missing"
        return
    with stream:
        for number, line in enumerate(stream, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("\t@"):
                continue
            fields = line.split("\t")
            if len(fields) != 8:
                yield f"{index.name}:{number}: not a record line nor a link line"
                continue
            url = fields[1]
            if url in listed:
                yield f"{index.name}:{number}: {url} listed again"
            elif url not in documents:
                yield f"{index.name}:{number}: {url} is not a stored document"
            listed.add(url)
    for url in documents.keys() - listed:
        yield f"{index.name}: no record of the stored document {url}"


def _md5(path: Path) -> str | None:
    try:
        with open(path, "rb", buffering=0) as stream:
            return hashlib.file_digest(stream, "md5").hexdigest()
    except OSError:
        return None


def _batches(items: list[Stored], size: int = 256) -> Iterator[list[Stored]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def check_mirror(root: Path, documents: dict[str, Stored], files: set[str],
                 map_: Callable[..., Iterator[Any]]) -> Iterator[str]:  # fmt: skip
    """Every stored document's file is there with its content; no other file is."""
    present = []
    for doc in documents.values():
        if doc.path in files:
            present.append(doc)
        else:
            yield f"{doc.path}: missing (stored for {doc.url})"

    def hash_batch(batch: list[Stored]) -> list[str]:
        problems = []
        for doc in batch:
            md5 = _md5(root / doc.path)
            if md5 is None:
                problems.append(f"{doc.path}: unreadable (stored for {doc.url})")
            elif md5 != doc.md5:
                problems.append(f"{doc.path}: changed (content MD5 {md5}, the state has {doc.md5})")
        return problems

    for problems in map_(hash_batch, _batches(present)):
        yield from problems
    stored = {doc.path for doc in documents.values()}
    for path in sorted(files - stored):
        yield f"{path}: not a stored document"


def check_browse(browse: Path, documents: dict[str, Stored], files: set[str], tally: Tally,
                 jobs: int = 1, elsewhere: frozenset[str] | set[str] = frozenset(),
                 held: frozenset[str] | set[str] = frozenset(),
                 refused: Callable[[str], str | None] = lambda url: None,
                 ) -> Iterator[str]:  # fmt: skip
    """``browse/`` holds a copy of every stored document, nothing else (but the copies in
    ``held``, of requisites another folder holds), every relative link of its pages leads to one
    of its files, and no page loads anything from the network but the page requisites in
    ``elsewhere`` (normalized URLs: what another folder of a crawl shared through Redis holds,
    and ``scrapy merge`` brings). A load the server refused when the crawl asked for it
    (``refused`` says how) is named as a failed requisite (:class:`Refused`), not a problem.
    Pages are read by ``jobs`` processes."""
    name = browse.name
    pages = []
    for doc in documents.values():
        where = browse_name(doc.path, doc.kind)
        if where not in files:
            yield f"{name}/{where}: missing (stored for {doc.url})"
        elif doc.kind != COPY:
            pages.append(doc)
    stored = {browse_name(doc.path, doc.kind) for doc in documents.values()}
    for path in sorted(files - stored - held):
        yield f"{name}/{path}: not a stored document"
    batches = list(_batches(pages, 500))
    if jobs > 1 and len(batches) > 1:
        # Reading pages is Python work that holds the GIL: processes, not threads. "spawn" does
        # not fork a process that runs threads. (Imported here: every command's start imports
        # this module, and multiprocessing is a few milliseconds of it.)
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(
            min(jobs, len(batches)),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_reader,
            initargs=(browse, files, elsewhere),
        )
        with pool:
            for problems, count, loads in pool.map(_broken_links, batches):
                tally.links += count
                yield from problems
                yield from _network_loads(name, loads, refused)
        return
    _reader(browse, files, elsewhere)
    for problems, count, loads in map(_broken_links, batches):
        tally.links += count
        yield from problems
        yield from _network_loads(name, loads, refused)


def _network_loads(name: str, loads: list[tuple[str, list[str]]],
                   refused: Callable[[str], str | None]) -> Iterator[str]:  # fmt: skip
    """One problem for each page (``browse/`` path) that loads something from the network, and
    one line for each failed requisite among what it loads."""
    for where, links in loads:
        network = []
        for link in links:
            if (outcome := refused(link)) is not None:
                yield Refused(f"{name}/{where}: failed page requisite {link} ({outcome})")
            else:
                network.append(link)
        if network:
            more = f" and {len(network) - 1} more" if len(network) > 1 else ""
            yield f"{name}/{where}: reaches the network when opened: loads {network[0]}{more}"


_READER: dict[str, Any] = {}  # the browse folder and its files, in a process that reads pages


def _reader(browse: Path, files: set[str], elsewhere: frozenset[str] | set[str]) -> None:
    _READER.update(browse=browse, files=files, elsewhere=elsewhere)


def _held_elsewhere(link: str, elsewhere: frozenset[str] | set[str]) -> bool:
    if not elsewhere:
        return False
    try:
        return normalize_url(link if link[:2] != "//" else "http:" + link) in elsewhere
    except UrlRejected:
        return False


def _broken_links(batch: list[Stored]) -> tuple[list[str], int, list[tuple[str, list[str]]]]:
    """The broken links of the browse copies of ``batch``, one line each, how many links, and
    what each page that loads something from the network loads (its ``browse/`` path, the
    URLs)."""
    browse: Path = _READER["browse"]
    files: set[str] = _READER["files"]
    problems = []
    network: list[tuple[str, list[str]]] = []
    count = 0
    for doc in batch:
        where = browse_name(doc.path, doc.kind)
        try:
            body = (browse / where).read_bytes()
        except OSError as exc:
            problems.append(f"{browse.name}/{where}: unreadable ({exc.strerror})")
            continue
        text = decode_page(body, doc.codec)[0]
        links = page_links(text, doc.kind)
        count += len(links)
        broken: dict[str, None] = {}  # distinct, in document order
        for link in links:
            target = link_target(where, link)
            if target is not None and target not in files:
                broken[link] = None
        problems += (f"{browse.name}/{where}: broken link {link}" for link in broken)
        elsewhere = _READER["elsewhere"]
        loads = [
            link for link in network_loads(text, doc.kind) if not _held_elsewhere(link, elsewhere)
        ]
        if loads:
            network.append((where, loads))
    return problems, count, network


def check_warc(folder: Path, tally: Tally) -> Iterator[str]:
    """Every file under ``folder`` reads to its end as WARC records."""
    names = sorted(list_files(folder))
    tally.warc_files = len(names)
    if not names:
        return
    try:
        from warcio.archiveiterator import ArchiveIterator
    except ImportError:
        yield f"{folder.name}/: warcio not installed, the WARC files cannot be read"
        return
    for name in names:
        path = folder / name
        where = f"{folder.name}/{name}"
        if path.stat().st_size == 0:
            yield f"{where}: empty"
            continue
        if name.endswith(".gz"):
            cut = gzip_cut(path)
            if cut is not None:
                yield f"{where}: {cut}"
                continue
        try:
            with open(path, "rb") as stream:
                iterator = ArchiveIterator(stream, no_record_parse=True)
                for record in iterator:
                    size = 0
                    while chunk := record.raw_stream.read(_CHUNK):
                        size += len(chunk)
                    if size != record.length:
                        offset = iterator.get_record_offset()
                        yield f"{where}: record at offset {offset} holds {size} of its {record.length} bytes"
                        break
        except Exception as exc:  # warcio raises many kinds on a damaged file: each is a problem
            yield f"{where}: unreadable: {type(exc).__name__}: {exc}"


def gzip_cut(path: Path) -> str | None:
    """Why the gzip file at ``path`` is damaged (a member cut short, a bad checksum, bytes that
    are not gzip), or None when every member is whole."""
    position = 0  # in the file, of data's first byte
    member_start = 0
    member = None
    with open(path, "rb") as stream:
        data = stream.read(_CHUNK)
        while data:
            if member is None:
                member, member_start = zlib.decompressobj(zlib.MAX_WBITS | 16), position
            try:
                member.decompress(data, _CHUNK)  # the output is not kept: bounded memory
                while member.unconsumed_tail and not member.eof:
                    member.decompress(member.unconsumed_tail, _CHUNK)
            except zlib.error as exc:
                return f"gzip member at offset {member_start} is damaged: {exc}"
            if member.eof:
                rest = member.unused_data
                position += len(data) - len(rest)
                member = None
                data = rest or stream.read(_CHUNK)
            else:
                position += len(data)
                data = stream.read(_CHUNK)
    if member is not None:
        return f"the gzip member at offset {member_start} is cut short"
    return None


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[options] CONF"

    def short_desc(self) -> str:
        return "Check that a crawl's repository is whole: files, hashes, index, browse/, warc/"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--jobs",
            type=int,
            default=os.cpu_count() or 1,
            help="processes reading the pages of browse/ (default: one per CPU)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give the configuration file")
        config = load_or_report(self, args[0])
        if config is None:
            return
        tally = Tally()
        try:
            for problem in verify(config, tally, opts.jobs):
                print(problem, flush=False)
        except StoreUnavailable as exc:  # raised before any problem: the records come first
            tell(self, f"{config.path}: error: {exc}", logging.ERROR)
            self.exitcode = 2
            return
        sys.stdout.flush()
        print(tally.summary(config.repository), file=sys.stderr)
        self.exitcode = 1 if tally.problems else 0
