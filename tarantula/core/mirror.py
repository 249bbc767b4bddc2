"""Where a document's copy lives in the mirror (SPEC 7.1), and how it is written there.

:func:`mirror_relpath` maps a normalized URL and the short name of the document's type to a
relative path ``<host>[:<port>]/<path>``:

>>> def show(url, doc_type=None):
...     return mirror_relpath(url, doc_type).as_posix()
>>> show("http://www.ics.forth.gr/", "html")
'www.ics.forth.gr/index.html'
>>> show("http://ex.com:8080/a/about", "html"), show("http://ex.com/a/report.pdf", "pdf")
('ex.com:8080/a/about.html', 'ex.com/a/report.pdf')
>>> show("http://ex.com/page.php?id=1", "html"), show("http://ex.com/page?id=1", "html")
('ex.com/page.php?id=1', 'ex.com/page?id=1.html')
>>> show("http://ex.com/find?dir=a/b"), show("http://ex.com/a%2Fb")
('ex.com/find?dir=a%2Fb', 'ex.com/a%2Fb')

The type's extension is added (after the query, as ``wget --adjust-extension`` does) when the last
segment has no extension, or one that is not really an extension: all digits (a version number),
or, for an HTML page, anything but :data:`HTML_EXTENSIONS`. So a page and a folder of the same
name never collide, even for version-numbered names:

>>> show("http://ex.com/release/3.11", "html"), show("http://ex.com/release/3.11/whatsnew.html", "html")
('ex.com/release/3.11.html', 'ex.com/release/3.11/whatsnew.html')
>>> show("http://ex.com/docs/version-2.x", "html"), show("http://ex.com/v1.2.3?get", "pdf")
('ex.com/docs/version-2.x.html', 'ex.com/v1.2.3?get.pdf')

Any type name is accepted; one that is not a plain extension gives :data:`UNKNOWN_TYPE_EXTENSION`:

>>> show("http://ex.com/sheet", "vnd.ms-excel"), show("http://ex.com/sheet.xls", "vnd.ms-excel")
('ex.com/sheet.bin', 'ex.com/sheet.xls')

Names stay in the percent-encoded form of the normalized URL, so a ``%2F`` never makes a folder.
Input that a normalized URL cannot contain (empty, ``.`` or ``..`` segments, control characters)
is still mapped to a safe name of its own, marked by a leading ``%%``, which no normalized name
has:

>>> show("http://ex.com/a//../\\x01/x")
'ex.com/a/%%/%%%2E%2E/%%%01/x'

So is a host folder that would take one of the repository's own top-level names
(:data:`~tarantula.core.layout.OWN_NAMES`: the index, the state folder, ``browse/``, ...), which a host without a
port can be named:

>>> show("http://browse/"), show("http://index.txt/a.pdf", "pdf"), show("http://browse:8080/")
('%%browse/index.html', '%%index%2Etxt/a.pdf', 'browse:8080/index.html')

Names longer than 200 bytes keep a prefix and their extension around ``~`` and a hash:

>>> name = show("http://ex.com/" + "n" * 300 + ".pdf").split("/")[1]
>>> len(name), name[-24:]
(200, 'nnn~bf2947b958a5f0f9.pdf')

Collisions inherent in the layout, left to the storage layer (which stores the second owner of a
path under :func:`disambiguate`): ``/about`` served as HTML and ``/about.html`` both give
``about.html``; ``/dir/`` and ``/dir/index.html`` both give ``dir/index.html``; http and https
share the host folder.

A file may still stand where another URL needs a folder when the file's name has a real extension
(a PDF at ``/a.pdf`` and a page at ``/a.pdf/b.html``; ``/index.php`` and ``/index.php/Page``).
:func:`write_atomic` refuses such a write; :func:`clash_free` gives the storage layer a name that
avoids it. Unlike the cases above, where that residual case ends up depends on which URL is stored
first: the folder moves if the file came first, the file if the folder did.

Temporary files (:func:`write_atomic`) have names that no document's name can take, so
:func:`sweep_temporary` never deletes a document.
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

from tarantula.core.layout import own_name

MAX_NAME_BYTES = 200


#: The extension given to an extensionless name whose document type is unknown, or whose type
#: name is not a plain extension (``vnd.ms-excel``).
UNKNOWN_TYPE_EXTENSION = "bin"

#: The short type name of HTML documents (see :data:`tarantula.core.document.CONTENT_TYPES`).
HTML_TYPE = "html"

#: Extensions HTML pages are commonly served under. An HTML page whose last segment has another
#: extension (``/docs/version-2.x``, ``/data.json``) gets ``.html`` added, as with
#: ``wget --adjust-extension``.
HTML_EXTENSIONS = frozenset(
    {
        *("html", "htm", "shtml", "xhtml", "xht"),
        *("php", "php3", "php4", "php5", "phtml"),
        *("asp", "aspx", "jsp", "jspx", "cfm", "cgi", "pl", "do", "action"),
    }
)

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([^/?#]*)([^?#]*)(?:\?([^#]*))?", re.S)
# A name as normalize_url writes it: unreserved and reserved characters, upper-case escapes.
_SAFE_NAME = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@\[\]]|%[0-9A-F]{2})+")
_SAFE_QUERY = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]]|%[0-9A-F]{2})+")
_TYPE_EXT = re.compile(r"[A-Za-z0-9_+\-]{1,16}")
_KEPT_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~")


class UnsafePath(ValueError):
    """A document that cannot be stored safely inside the repository."""


def mirror_relpath(normalized_url: str, doc_type: str | None) -> PurePosixPath:
    """Relative mirror path of a document, SPEC 7.1.

    ``doc_type`` is the short name of the document's type (``html``, ``pdf``, any text), or None
    (or "") when it has none. Its extension (the type name itself, or
    :data:`UNKNOWN_TYPE_EXTENSION` when that is not a plain extension) is added to a last segment
    that has no extension, one of digits only, or, for HTML, one not in :data:`HTML_EXTENSIONS`.
    Raises :class:`UnsafePath` only if the URL cannot be split, whatever ``doc_type`` is.
    """
    return PurePosixPath(mirror_name(normalized_url, doc_type))


def mirror_name(normalized_url: str, doc_type: str | None) -> str:
    """:func:`mirror_relpath` as a string: the path's segments joined by ``/``. No segment is
    empty, ``.``, ``..`` or holds a ``/`` (:func:`_safe` escapes them), so it is the very text
    of that path, made without a path object: the browsable copy asks it for most links.

    >>> mirror_name("http://h.test/a/b?x=1/2", "html"), mirror_name("http://h.test//..", None)
    ('h.test/a/b?x=1%2F2.html', 'h.test/%%/%%%2E%2E')
    """
    match = _URL.match(normalized_url)
    if match is None or not match[1]:
        raise UnsafePath(f"not an absolute URL: {normalized_url!r}")
    authority, path, query = match.groups()
    *folders, last = (path or "/").split("/")[1:]
    name = _safe(last) if last else "index.html"
    ext = posixpath.splitext(name)[1]
    if query:
        name += "?" + _query_part(query)
    type_ext = _type_extension(doc_type)
    if type_ext and not _is_real_extension(ext, doc_type):
        ext = "." + type_ext
        name += ext  # after the query, as wget --adjust-extension does
    return "/".join(
        (_host_segment(authority), *[_shorten(_safe(f)) for f in folders], _shorten(name, ext))
    )


@functools.lru_cache(maxsize=1024)
def _host_segment(authority: str) -> str:
    """The first segment of a mirror path: a crawl has few hosts, each met on every page."""
    return _shorten(_host_folder(authority))


@functools.lru_cache(maxsize=1024)
def copy_relpath(normalized_url: str, doc_type: str | None) -> PurePosixPath:
    """Where the mirror puts a new document's copy, unless the name is taken: a document of
    unknown type still gets an extension, so its file never takes the name of a folder that a
    longer URL needs (SPEC 7.1). Remembered for the last documents: the spider asks it with a
    content claim, and the mirror then again.

    >>> str(copy_relpath("http://h.test/a", None)), str(copy_relpath("http://h.test/a", "pdf"))
    ('h.test/a.bin', 'h.test/a.pdf')
    """
    return PurePosixPath(copy_name(normalized_url, doc_type))


def copy_name(normalized_url: str, doc_type: str | None) -> str:
    """:func:`copy_relpath` as a string (see :func:`mirror_name`).

    >>> copy_name("http://h.test/a", None)
    'h.test/a.bin'
    """
    return mirror_name(normalized_url, doc_type or UNKNOWN_TYPE_EXTENSION)


def _type_extension(doc_type: str | None) -> str:
    """The extension a type gives a name: its short name if that is a plain extension.

    >>> _type_extension("pdf"), _type_extension("vnd.ms-excel"), _type_extension(None)
    ('pdf', 'bin', '')
    """
    if not doc_type:
        return ""
    return doc_type if _TYPE_EXT.fullmatch(doc_type) else UNKNOWN_TYPE_EXTENSION


def _is_real_extension(ext: str, doc_type: str | None) -> bool:
    """Whether ``ext`` (with its dot) is kept as the extension of a document of ``doc_type``.

    >>> _is_real_extension(".pdf", "pdf"), _is_real_extension(".11", "pdf")
    (True, False)
    >>> _is_real_extension(".php", "html"), _is_real_extension(".x", "html"), _is_real_extension(".", None)
    (True, False, False)
    """
    bare = ext[1:]
    if not bare or (bare.isascii() and bare.isdigit()):
        return False
    return doc_type != HTML_TYPE or bare.lower() in HTML_EXTENSIONS


#: Device names that Windows (and so SMB shares and many copy tools) will not create as files.
_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))]
)


def _safe(name: str) -> str:
    """``name`` itself when it is a plain normalized name, else an escaped form marked by ``%%``.

    >>> _safe("report.pdf"), _safe("con"), _safe("NUL.txt")
    ('report.pdf', '%%con', '%%NUL%2Etxt')
    """
    stem = name.partition(".")[0]
    if (
        name not in (".", "..")
        and _SAFE_NAME.fullmatch(name)
        and (len(stem) not in (3, 4) or stem.upper() not in _RESERVED)
    ):
        return name
    return "%%" + _escape_all(name)


def _host_folder(authority: str) -> str:
    """The folder of a host (``host[:port]``): :func:`_safe`, and escaped like an unsafe name when
    it is one of the repository's own names (in any case, for case-insensitive file systems).

    >>> _host_folder("ex.com:8080"), _host_folder("warc"), _host_folder("Report.HTML")
    ('ex.com:8080', '%%warc', '%%Report%2EHTML')
    >>> _host_folder("a.wacz")
    '%%a%2Ewacz'
    """
    if own_name(authority):
        return "%%" + _escape_all(authority)
    return _safe(authority)


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
    if len(name) <= MAX_NAME_BYTES and name.isascii():  # a byte a character: fits as it is
        return name
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


#: How many alternative names :func:`clash_free` tries for one segment before giving up.
_CLASH_ATTEMPTS = 8


def clash_free(repository: Path, relpath: PurePosixPath, url: str) -> PurePosixPath:
    """``relpath``, or a name for the document of ``url`` that avoids a file/folder clash.

    A folder of ``relpath`` that is a file in ``repository`` (``/a.pdf`` stored, then
    ``/a.pdf/b.html``) becomes ``<name>~<hash>`` with the hash of that folder's own path, so every
    document below it goes to the same other folder: ``a.pdf~<hash>/b.html``. A last segment that
    is a folder (``/a.pdf/b.html`` stored, then ``/a.pdf``) gets :func:`disambiguate`'s name for
    ``url``: ``a~<hash>.pdf``. Which one moves depends on which came first. Alternatives are tried
    until one is free, so the result never clashes with what the repository holds now. Reads the
    repository, writes nothing; :func:`store_path` still fences the result.

    Raises :class:`UnsafePath` if ``relpath`` is not a relative path without ``..``, or if no free
    name turns up.
    """
    if relpath.is_absolute() or not relpath.parts or ".." in relpath.parts:
        raise UnsafePath(f"not a path inside the repository: {relpath}")
    parts = list(relpath.parts)
    for index in range(len(parts)):
        is_last = index == len(parts) - 1
        for _ in range(_CLASH_ATTEMPTS):
            here = Path(repository, *parts[: index + 1])
            # a folder where the file goes; a file (or a dangling symlink) where a folder goes
            clashes = here.is_dir() if is_last else (os.path.lexists(here) and not here.is_dir())
            if not clashes:
                break
            moved = PurePosixPath(*parts[: index + 1])
            parts[index] = disambiguate(moved, url).name if is_last else _folder_alternative(moved)
        else:
            raise UnsafePath(f"no name without a file/folder clash for {relpath}")
        if not os.path.lexists(here):
            break  # nothing exists below a missing folder
    return PurePosixPath(*parts)


def _folder_alternative(folder: PurePosixPath) -> str:
    """Another name for the last folder of ``folder``, from the hash of the folder's path.

    >>> _folder_alternative(PurePosixPath("ex.com/a.pdf"))
    'a.pdf~05058cb0bad79c4a'
    """
    # The hash is of the folder's path, not of a document's URL: every document below the
    # folder must land in the one same alternative folder.
    digest = hashlib.md5(folder.as_posix().encode("utf-8"), usedforsecurity=False).hexdigest()
    return _shorten(f"{folder.name}~{digest[:16]}", "")


def store_path(repository: Path, relpath: PurePosixPath) -> Path:
    """Absolute target path of ``relpath`` in ``repository``.

    Raises :class:`UnsafePath` unless it lies inside the repository once the symlinks of its
    existing parents (and of the target itself) are resolved.
    """
    if relpath.is_absolute() or not relpath.parts or ".." in relpath.parts:
        raise UnsafePath(f"not a path inside the repository: {relpath}")
    text = str(relpath)
    if "\0" in text:
        raise UnsafePath(f"NUL character in {relpath!r}")
    root = _resolved(str(repository))
    folder, _, name = text.rpartition("/")
    parent = _folder_inside(root, folder)
    target = parent / name
    if os.path.islink(target):  # only a symlink at the target can lead elsewhere now
        try:
            final = target.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise UnsafePath(f"cannot resolve {relpath}: {exc}") from exc
        if not final.is_relative_to(root) or final == root:
            raise UnsafePath(f"{relpath} leads out of the repository")
    return target


# The crawler is the only writer of its repository and makes folders, never symlinks: a folder
# found inside the repository stays inside for the crawl, and pages of one folder are many (its
# resolution costs a system call a path segment).
@functools.lru_cache(maxsize=4096)
def _folder_inside(root: Path, folder: str) -> Path:
    """``folder`` (relative, "" for the root) of the repository at ``root`` with its symlinks
    resolved; raises :class:`UnsafePath` when that leads out of the repository."""
    try:
        parent = root.joinpath(folder).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable folder
        raise UnsafePath(f"cannot resolve {folder}: {exc}") from exc
    if not parent.is_relative_to(root):
        raise UnsafePath(f"{folder} leads out of the repository")
    return parent


@functools.lru_cache(maxsize=16)
def _resolved(repository: str) -> Path:
    return Path(repository).resolve()


# A temporary's name starts with ".%%", which no name the mirror gives a document can:
# - a mirror name starts with a safe name (_SAFE_NAME), an escaped one ("%%", then _escape_all's
#   output) or "index.html"; so one that starts with "." starts with a safe name;
# - a safe name never holds "%%": in _SAFE_NAME a "%" is always followed by two hex digits;
# - what follows the safe name is "?" and the query, "." and an extension (_TYPE_EXT characters),
#   or, from _shorten, disambiguate and _folder_alternative, "~" and hex digits after a prefix of
#   the name (a prefix of a name without "%%" at its start has none either).
# So ".%%" would have to be the start of a safe name, which it cannot be. Tested with Hypothesis.
# Temporaries of the previous form (".<name>.<16 hex>.tmp") are not swept: a document can have
# such a name (/.a.0123456789abcdef.tmp); any an older version left behind just stay, harmless.
_TEMPORARY_PREFIX = ".%%"
_TEMPORARY = re.compile(re.escape(_TEMPORARY_PREFIX) + r".*\.[0-9a-f]{16}\.tmp", re.S)


def sweep_temporary(repository: Path) -> int:
    """Delete the temporary files that writes cut short by a crash left in the mirror; returns how
    many. Only names that :func:`write_atomic` makes are touched, never a document's."""
    removed = 0
    for folder, _, names in os.walk(repository):
        for name in names:
            if _TEMPORARY.fullmatch(name):
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
    temporary = folder / f"{_TEMPORARY_PREFIX}{path.name[:64]}.{secrets.token_hex(8)}.tmp"
    fd = _create(temporary)
    try:
        try:
            _write_all(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except IsADirectoryError as exc:
        os.unlink(temporary)
        raise UnsafePath(f"{path} is a folder") from exc
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


def write_new(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` in place when no file is there yet (False, writing nothing,
    when one is), creating the missing parent folders: a system call fewer than
    :func:`write_atomic`'s temporary and rename. Only for a file whose writing a committed row
    redoes after a crash, since a kill during the write leaves part of it; one already there
    (perhaps a hard link to another file) is only ever replaced by :func:`write_atomic`.
    """
    try:
        fd = _create(path)
    except FileExistsError:
        return False
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        raise
    return True


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to the file open at ``fd`` (a file object's buffer would only copy it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _create(path: Path) -> int:
    """A descriptor open for writing on a new file at ``path``, its missing parent folders made;
    raises :class:`FileExistsError` when anything is there (a symlink, even a dangling one, too)
    and :class:`UnsafePath` when an existing parent is not a folder."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:  # the folder is there most of the time: no system call is spent on finding out first
        return os.open(path, flags, 0o666)
    except (FileNotFoundError, NotADirectoryError):
        _make_folder(path.parent)
        return os.open(path, flags, 0o666)


def _make_folder(folder: Path) -> None:
    """Create ``folder`` and its missing parents; raises :class:`UnsafePath` when an existing
    one is not a folder."""
    for ancestor in (folder, *folder.parents):
        if ancestor.exists() or ancestor.is_symlink():
            if not ancestor.is_dir():
                raise UnsafePath(f"{ancestor} is not a folder")
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:  # lost a race with another writer
        raise UnsafePath(str(exc)) from exc
