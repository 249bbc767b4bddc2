"""The names of a repository's own files and folders, and the id of a repository folder in a
shared crawl: one module every part reads them from, importing no optional package.

    <repository>/
      index.txt             the index (SPEC 7.2)
      duplicates.tsv        exact duplicates: duplicate URL, TAB, the stored original's URL
      near-duplicates.tsv   near-duplicates: URL, TAB, the stored original's URL, TAB, bits apart
      report.html           the crawl report (SPEC 11)
      warc/                 WARC files of every exchange (warc = yes)
      browse/               the mirror with links that resolve offline (browsable = yes)
      .tarantula/state.db   the crawl state
      .tarantula/stats.json the last run's stats (Scrapy's, as JSON)
      .tarantula/folder-id  the folder's id in a crawl shared through Redis
      .tarantula/records/   its workers' index records in a crawl shared through Redis
      <host>[:<port>]/...   the mirror (:mod:`tarantula.core.mirror`)
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

INDEX_NAME = "index.txt"
DUPLICATES_NAME = "duplicates.tsv"
NEAR_DUPLICATES_NAME = "near-duplicates.tsv"
REPORT_NAME = "report.html"
WARC_FOLDER = "warc"
BROWSE_NAME = "browse"
STATE_FOLDER = ".tarantula"
STATE_NAME = "state.db"
STATS_NAME = "stats.json"  # the last run's final Scrapy stats, in the state folder
#: The captures of the WARC files (URL, date, digest), in the state folder: what a recrawl's 304
#: revisit records refer to.
CAPTURES_NAME = "warc-captures.tsv"
#: The database keeping the bookkeeping of ``browse/`` in a folder of a crawl shared through
#: Redis, and the lock its writers take turns with, in the state folder.
BROWSE_STATE_NAME = "browse.db"
BROWSE_LOCK_NAME = "browse.lock"
#: The lock the workers of one folder take turns with to write its report, in the state folder.
REPORT_LOCK_NAME = "report.lock"
#: The file in the state folder naming the repository folder in a shared crawl.
FOLDER_ID_NAME = "folder-id"
#: Top-level names of the repository that are not mirrored documents.
OWN_NAMES = frozenset(
    {INDEX_NAME, DUPLICATES_NAME, NEAR_DUPLICATES_NAME, STATE_FOLDER, BROWSE_NAME, WARC_FOLDER}
    | {REPORT_NAME}
)
#: The ending of the WACZ package's name (``<configuration's name>.wacz``) and of the file it is
#: written to before it takes that name.
WACZ_ENDINGS = (".wacz", ".wacz.partial")


def own_name(name: str) -> bool:
    """Whether ``name``, at the top of a repository, is one of its own files rather than a host's
    folder of the mirror (in any case, for case-insensitive file systems).

    >>> own_name("index.txt"), own_name("Crawl.WACZ"), own_name("ex.com:8080")
    (True, True, False)
    """
    folded = name.lower()
    return folded in OWN_NAMES or folded.endswith(WACZ_ENDINGS)


#: ``tarantula-<UTC yyyymmddhhmmss>-<serial>.warc.gz``; the serial runs on across the repository.
WARC_FILE_NAME = re.compile(r"tarantula-(\d{14})-(\d{5,})\.warc\.gz")


def folder_id_of(root: Path) -> str:
    """The id of the repository folder ``root`` in a shared crawl, kept in
    ``<root>/.tarantula/folder-id``: a random one, made by the first process to ask.

    Two processes racing to make it end with the same id: each writes its own candidate to a file
    of its own, and the first to link it under the shared name wins (a link, like an ``O_EXCL``
    create, fails when the name exists, and what it names is complete); the others read it.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as root:
    ...     first = folder_id_of(Path(root))
    ...     first == folder_id_of(Path(root)), len(first)
    (True, 16)
    """
    path = root / STATE_FOLDER / FOLDER_ID_NAME
    if path.exists():
        return _read_folder_id(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    candidate = secrets.token_hex(8)
    temporary = path.with_name(f".{FOLDER_ID_NAME}.{os.getpid()}.{candidate}")
    with open(temporary, "w", encoding="ascii") as out:
        out.write(candidate + "\n")
        out.flush()
        os.fsync(out.fileno())
    try:
        os.link(temporary, path)
    except FileExistsError:
        return _read_folder_id(path)
    finally:
        temporary.unlink()
    return candidate


def read_folder_id(root: Path) -> str | None:
    """The folder id of repository folder ``root``, None when it has none (no worker of a shared
    crawl wrote there); unlike :func:`folder_id_of` it never makes one. A ``ValueError`` says the
    file is empty."""
    path = root / STATE_FOLDER / FOLDER_ID_NAME
    return _read_folder_id(path) if path.is_file() else None


def _read_folder_id(path: Path) -> str:
    folder_id = path.read_text(encoding="ascii").strip()
    if not folder_id:
        raise ValueError(f"{path} is empty: remove it, and a new folder id is made")
    return folder_id
