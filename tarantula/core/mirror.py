"""Where a document's copy lives in the mirror (SPEC 7.1), and how it is written there.

:func:`mirror_relpath` maps a normalized URL and the extension of the document's type to a
relative path ``<host>[:<port>]/<path>``:

>>> def show(url, type_ext=None):
...     return mirror_relpath(url, type_ext).as_posix()
>>> show("http://www.ics.forth.gr/", "html")
'www.ics.forth.gr/index.html'
>>> show("http://ex.com:8080/a/about", "html"), show("http://ex.com/a/report.pdf", "pdf")
('ex.com:8080/a/about.html', 'ex.com/a/report.pdf')
>>> show("http://ex.com/page.php?id=1", "html"), show("http://ex.com/page?id=1", "html")
('ex.com/page.php?id=1', 'ex.com/page?id=1.html')
>>> show("http://ex.com/find?dir=a/b"), show("http://ex.com/a%2Fb")
('ex.com/find?dir=a%2Fb', 'ex.com/a%2Fb')

Names stay in the percent-encoded form of the normalized URL, so a ``%2F`` never makes a folder.
Input that a normalized URL cannot contain (empty, ``.`` or ``..`` segments, control characters)
is still mapped to a safe name of its own, marked by a leading ``%%``, which no normalized name
has:

>>> show("http://ex.com/a//../\\x01/x")
'ex.com/a/%%/%%%2E%2E/%%%01/x'

Names longer than 200 bytes keep a prefix and their extension around ``~`` and a hash:

>>> name = show("http://ex.com/" + "n" * 300 + ".pdf").split("/")[1]
>>> len(name), name[-24:]
(200, 'nnn~bf2947b958a5f0f9.pdf')

Collisions inherent in the layout, left to the storage layer (which stores the second owner of a
path under :func:`disambiguate`): ``/about`` served as HTML and ``/about.html`` both give
``about.html``; ``/dir/`` and ``/dir/index.html`` both give ``dir/index.html``; http and https
share the host folder. A file may also stand where another URL needs a folder (``/a.html`` and
``/a.html/b``), which :func:`write_atomic` refuses.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import posixpath
import re
import secrets
from pathlib import Path, PurePosixPath

MAX_NAME_BYTES = 200

#: The extension given to an extensionless name whose document type is unknown.
UNKNOWN_TYPE_EXTENSION = "bin"

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([^/?#]*)([^?#]*)(?:\?([^#]*))?", re.S)
# A name as normalize_url writes it: unreserved and reserved characters, upper-case escapes.
_SAFE_NAME = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@\[\]]|%[0-9A-F]{2})+")
_SAFE_QUERY = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]]|%[0-9A-F]{2})+")
_TYPE_EXT = re.compile(r"[A-Za-z0-9_+\-]{1,16}")
_KEPT_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~")


class UnsafePath(ValueError):
    """A document that cannot be stored safely inside the repository."""


def mirror_relpath(normalized_url: str, type_ext: str | None) -> PurePosixPath:
    """Relative mirror path of a document, SPEC 7.1.

    ``type_ext`` is the extension of the document's type without the dot (``html``), or None
    (or "") when the type has none.
    It is added to a last segment that has no extension. Raises :class:`UnsafePath` if the URL
    cannot be split or ``type_ext`` is not a plain extension.
    """
    match = _URL.match(normalized_url)
    if match is None or not match[1]:
        raise UnsafePath(f"not an absolute URL: {normalized_url!r}")
    if type_ext and not _TYPE_EXT.fullmatch(type_ext):
        raise UnsafePath(f"bad type extension {type_ext!r} for {normalized_url!r}")
    authority, path, query = match.groups()
    *folders, last = (path or "/").split("/")[1:]
    name = _safe(last) if last else "index.html"
    ext = posixpath.splitext(name)[1]
    if query:
        name += "?" + _query_part(query)
    if not ext and type_ext:
        ext = "." + type_ext
        name += ext  # after the query, as wget --adjust-extension does
    parts = [_shorten(_safe(authority)), *(_shorten(_safe(f)) for f in folders)]
    return PurePosixPath(*parts, _shorten(name, ext))


#: Device names that Windows (and so SMB shares and many copy tools) will not create as files.
_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))]
)


def _safe(name: str) -> str:
    """``name`` itself when it is a plain normalized name, else an escaped form marked by ``%%``.

    >>> _safe("report.pdf"), _safe("con"), _safe("NUL.txt")
    ('report.pdf', '%%con', '%%NUL%2Etxt')
    """
    if (
        name not in (".", "..")
        and _SAFE_NAME.fullmatch(name)
        and name.split(".")[0].upper() not in _RESERVED
    ):
        return name
    return "%%" + _escape_all(name)


def _escape_all(text: str) -> str:
    # Percent-encoding everything but a few characters, '%' and '.' included, is one-to-one.
    return "".join(
        chr(b) if b in _KEPT_BYTES else f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass")
    )


def _query_part(query: str) -> str:
    """The query as it goes into a file name: '/' becomes ``%2F``, one-to-one."""
    if not _SAFE_QUERY.fullmatch(query):
        return "%%" + _escape_all(query)
    # Escaping the '%' of an existing %2F or %25 first keeps "a/b" and "a%2Fb" apart.
    return re.sub(r"%(?=2F|25)", "%25", query).replace("/", "%2F")


def _shorten(name: str, ext: str | None = None) -> str:
    """``name`` cut to MAX_NAME_BYTES: a prefix, ``~``, 16 hex digits of its MD5, the extension.

    ``ext`` defaults to the name's own extension; one longer than 20 bytes is not kept.
    """
    raw = name.encode("utf-8")
    if len(raw) <= MAX_NAME_BYTES:
        return name
    tail = (posixpath.splitext(name)[1] if ext is None else ext).encode("utf-8")
    if len(tail) > 20:
        tail = b""
    digest = hashlib.md5(raw, usedforsecurity=False).hexdigest()[:16].encode("ascii")
    keep = MAX_NAME_BYTES - 1 - len(digest) - len(tail)
    return (raw[:keep] + b"~" + digest + tail).decode("utf-8", "ignore")


def disambiguate(relpath: PurePosixPath, url: str) -> PurePosixPath:
    """Another name in the same folder for a second URL that maps to ``relpath``.

    The URL's MD5 goes before the extension, so the copy keeps its type:

    >>> disambiguate(PurePosixPath("ex.com/about.html"), "http://ex.com/about").as_posix()
    'ex.com/about~e1095e2014f7b45b.html'
    """
    name = relpath.name
    stem, ext = posixpath.splitext(name)
    if "?" in ext:  # "page.php?id=1": the extension is the one after the last '.' of the query
        stem, ext = name, ""
    digest = hashlib.md5(url.encode("utf-8"), usedforsecurity=False).hexdigest()[:16]
    return relpath.with_name(_shorten(f"{stem}~{digest}{ext}", ext))


def store_path(repository: Path, relpath: PurePosixPath) -> Path:
    """Absolute target path of ``relpath`` in ``repository``.

    Raises :class:`UnsafePath` unless it lies inside the repository once the symlinks of its
    existing parents (and of the target itself) are resolved.
    """
    if relpath.is_absolute() or not relpath.parts or ".." in relpath.parts:
        raise UnsafePath(f"not a path inside the repository: {relpath}")
    if "\0" in str(relpath):
        raise UnsafePath(f"NUL character in {relpath!r}")
    try:
        root = _resolved(str(repository))
        target = root.joinpath(relpath)
        parent = target.parent.resolve()
        # Only a symlink at the target itself can lead elsewhere once the parent is checked.
        final = target.resolve() if os.path.islink(parent / target.name) else parent / target.name
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable folder
        raise UnsafePath(f"cannot resolve {relpath}: {exc}") from exc
    if not (parent.is_relative_to(root) and final.is_relative_to(root) and final != root):
        raise UnsafePath(f"{relpath} leads out of the repository")
    return parent / target.name


@functools.lru_cache(maxsize=16)
def _resolved(repository: str) -> Path:
    return Path(repository).resolve()


_TEMPORARY = re.compile(r"^\..*\.[0-9a-f]{16}\.tmp$")


def sweep_temporary(repository: Path) -> int:
    """Delete the temporary files that writes cut short by a crash left in the mirror; returns how
    many. Only names that :func:`write_atomic` makes are touched."""
    removed = 0
    for folder, _, names in os.walk(repository):
        for name in names:
            if _TEMPORARY.match(name):
                os.unlink(os.path.join(folder, name))
                removed += 1
    return removed


def write_atomic(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Write ``data`` to ``path`` so that a crash never leaves a half-written file there.

    Parent folders are created; the data goes to a temporary file in the same folder, is synced
    to disk (unless ``sync`` is false: the caller syncs many files at once) and renamed over
    ``path``. Raises :class:`UnsafePath` if an existing parent is not a folder or ``path`` is a
    folder.
    """
    path = Path(path)
    folder = path.parent
    for ancestor in (folder, *folder.parents):
        if ancestor.exists() or ancestor.is_symlink():
            if not ancestor.is_dir():
                raise UnsafePath(f"{ancestor} is not a folder")
            break
    if path.is_dir():
        raise UnsafePath(f"{path} is a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:  # lost a race with another writer
        raise UnsafePath(str(exc)) from exc
    temporary = folder / f".{path.name[:64]}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            if sync:
                os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    if not sync:
        return
    # Sync the folder too, so that the rename itself survives a crash.
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
