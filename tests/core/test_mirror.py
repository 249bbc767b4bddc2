"""Mirror layout (SPEC 7.1): URL to path mapping, the repository fence and atomic writes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tarantula.core import mirror
from tarantula.core.layout import OWN_NAMES
from tarantula.core.mirror import (
    UNKNOWN_TYPE_EXTENSION,
    UnsafePath,
    clash_free,
    disambiguate,
    mirror_name,
    mirror_relpath,
    store_path,
    sweep_temporary,
    write_atomic,
    write_new,
)
from tarantula.core.urls import UrlRejected, normalize_url


@pytest.mark.parametrize(
    ("url", "type_ext", "expected"),
    [
        # first component: host, or host:port for a non-default port
        ("http://www.ics.forth.gr/", "html", "www.ics.forth.gr/index.html"),
        ("http://ex.com:8080/a.html", "html", "ex.com:8080/a.html"),
        ("https://[::1]:8443/a.html", "html", "[::1]:8443/a.html"),
        ("http://[2001:db8::1]/", None, "[2001:db8::1]/index.html"),
        # a host named like one of the repository's own files or folders is escaped
        ("http://browse/", "html", "%%browse/index.html"),
        ("http://warc/a/b.pdf", "pdf", "%%warc/a/b.pdf"),
        ("http://index.txt/about", "html", "%%index%2Etxt/about.html"),
        ("http://report.html/", None, "%%report%2Ehtml/index.html"),
        ("http://duplicates.tsv/x?y=1", None, "%%duplicates%2Etsv/x?y=1"),
        ("http://.tarantula/state.db", None, "%%%2Etarantula/state.db"),
        ("http://BROWSE/", None, "%%BROWSE/index.html"),  # not a normalized URL: defensive
        ("http://browse:8080/", "html", "browse:8080/index.html"),  # with a port: no clash
        ("http://browse.ex.com/", "html", "browse.ex.com/index.html"),
        # path segments kept percent-encoded; %2F never makes a folder
        ("http://ex.com/a/b/c.pdf", "pdf", "ex.com/a/b/c.pdf"),
        ("http://ex.com/a%2Fb/c%20d.html", "html", "ex.com/a%2Fb/c%20d.html"),
        ("http://ex.com/%C3%BC/", "html", "ex.com/%C3%BC/index.html"),
        ("http://ex.com/dir/", None, "ex.com/dir/index.html"),
        # a last segment without extension gets the type's; one with an extension keeps it
        ("http://ex.com/about", "html", "ex.com/about.html"),
        ("http://ex.com/about", None, "ex.com/about"),
        ("http://ex.com/data.json", "json", "ex.com/data.json"),
        ("http://ex.com/.profile", "html", "ex.com/.profile.html"),
        ("http://ex.com/a.d/about", "html", "ex.com/a.d/about.html"),
        # an extension that is all digits is a version number, not an extension
        ("http://ex.com/release/3.11", "html", "ex.com/release/3.11.html"),
        ("http://ex.com/release/3.11/whatsnew.html", "html", "ex.com/release/3.11/whatsnew.html"),
        ("http://ex.com/v1.2.3", "pdf", "ex.com/v1.2.3.pdf"),
        ("http://ex.com/list/page.2", "html", "ex.com/list/page.2.html"),
        ("http://ex.com/release/3.11", None, "ex.com/release/3.11"),  # no type: nothing to add
        ("http://ex.com/file.", "pdf", "ex.com/file..pdf"),  # an empty extension is none
        # an HTML page keeps only an extension HTML pages are served under
        ("http://ex.com/docs/version-2.x", "html", "ex.com/docs/version-2.x.html"),
        ("http://ex.com/data.json", "html", "ex.com/data.json.html"),
        ("http://ex.com/INDEX.HTM", "html", "ex.com/INDEX.HTM"),
        ("http://ex.com/w/index.php", "html", "ex.com/w/index.php"),
        ("http://ex.com/a.aspx", "html", "ex.com/a.aspx"),
        ("http://ex.com/version-2.x", "pdf", "ex.com/version-2.x"),  # only HTML is held to it
        ("http://ex.com/a.tar.gz", "gz", "ex.com/a.tar.gz"),
        # any type name is accepted: one that is not a plain extension gives "bin"
        ("http://ex.com/sheet", "vnd.ms-excel", "ex.com/sheet.bin"),
        ("http://ex.com/a", "vnd.foo.bar+xml", "ex.com/a.bin"),
        ("http://ex.com/a", "../x", "ex.com/a.bin"),
        ("http://ex.com/a", "h/t", "ex.com/a.bin"),
        ("http://ex.com/a", "", "ex.com/a"),
        ("http://ex.com/", "../x", "ex.com/index.html"),
        ("http://ex.com/sheet.xls", "vnd.ms-excel", "ex.com/sheet.xls"),
        # queries stay in the file name, '/' inside them as %2F
        ("http://ex.com/page.php?id=1", "html", "ex.com/page.php?id=1"),
        ("http://ex.com/page?id=1", "html", "ex.com/page?id=1.html"),
        ("http://ex.com/page?id=1", None, "ex.com/page?id=1"),
        ("http://ex.com/release/3.11?x=1", "html", "ex.com/release/3.11?x=1.html"),
        ("http://ex.com/feed.json?cb=f", "html", "ex.com/feed.json?cb=f.html"),
        ("http://ex.com/?q=1", "html", "ex.com/index.html?q=1"),
        ("http://ex.com/s.cgi?path=/a/b&x=?", "html", "ex.com/s.cgi?path=%2Fa%2Fb&x=?"),
        ("http://ex.com/s.cgi?p=a%2Fb", "html", "ex.com/s.cgi?p=a%252Fb"),  # apart from p=a/b
        ("http://ex.com/s.cgi?p=50%25", "html", "ex.com/s.cgi?p=50%2525"),
        ("http://ex.com/s.cgi?p=%C3%BC", "html", "ex.com/s.cgi?p=%C3%BC"),
        # defensive: what normalize_url does not write still gets a safe name of its own
        ("http://ex.com/a//b", "html", "ex.com/a/%%/b.html"),
        ("http://ex.com/a/./b", "html", "ex.com/a/%%%2E/b.html"),
        ("http://ex.com/a/../b", "html", "ex.com/a/%%%2E%2E/b.html"),
        ("http://ex.com/..", "html", "ex.com/%%%2E%2E.html"),
        ("http://ex.com/a\x00b/c\nd", None, "ex.com/%%a%00b/%%c%0Ad"),
        ("http://ex.com/%2e/%41", None, "ex.com/%%%252e/%41"),
        ("http://ex.com/a b?x y", None, "ex.com/%%a%20b?%%x%20y"),
        ("http://../x", None, "%%%2E%2E/x"),
        ("http://ex.com/x?", "html", "ex.com/x.html"),
    ],
)
def test_mirror_relpath(url, type_ext, expected):
    assert mirror_relpath(url, type_ext) == PurePosixPath(expected)
    assert mirror_relpath(url, type_ext).as_posix() == expected  # nothing folded by PurePosixPath


def test_no_host_folder_takes_a_name_of_the_repository_itself():
    for name in OWN_NAMES:
        for url in (f"http://{name}/", f"http://{name}/{name}", f"https://{name.upper()}/a"):
            folder = mirror_relpath(url, "html").parts[0]
            assert folder.lower() not in OWN_NAMES and folder.startswith("%%"), (url, folder)
    urls = [f"http://{name}/" for name in OWN_NAMES] + ["http://%%browse/", "http://browse:80/"]
    assert len({mirror_relpath(url, "html") for url in urls}) == len(urls)  # still one-to-one


def test_long_names_are_shortened_with_hash_and_extension():
    long_segment = "s" * 250
    relpath = mirror_relpath(f"http://ex.com/{long_segment}/{long_segment}.pdf", "pdf")
    folder, name = relpath.parts[1:]
    assert len(folder.encode()) <= 200 and folder.startswith("sss") and "~" in folder
    assert len(name.encode()) <= 200 and name.endswith(".pdf") and "~" in name
    # names that differ only beyond the kept prefix stay apart
    other = mirror_relpath(f"http://ex.com/{long_segment}x.pdf", "pdf")
    assert other.name != mirror_relpath(f"http://ex.com/{long_segment}.pdf", "pdf").name
    assert len(mirror_relpath("http://ex.com/page?" + "q" * 300, "html").name) == 200
    assert mirror_relpath("http://ex.com/page?" + "q" * 300, "html").name.endswith(".html")
    assert mirror_relpath("http://ex.com/" + "x" * 200, None).name == "x" * 200  # 200 bytes: kept


@pytest.mark.parametrize(
    ("url", "type_ext"),
    [
        ("not a url", None),
        ("http:///a", None),
        ("http:///a", "vnd.ms-excel"),
    ],
)
def test_mirror_relpath_refuses(url, type_ext):
    with pytest.raises(UnsafePath):
        mirror_relpath(url, type_ext)


def test_disambiguate_keeps_folder_and_extension():
    first = mirror_relpath("http://ex.com/d/about.html", "html")
    assert first == mirror_relpath("http://ex.com/d/about", "html")  # the documented collision
    second = disambiguate(first, "http://ex.com/d/about")
    assert second.parent == first.parent and second.suffix == ".html" and second != first
    assert disambiguate(first, "http://ex.com/d/about") == second
    assert disambiguate(PurePosixPath("h/p.php?id=1"), "u").name.startswith("p.php?id=1~")


def test_store_path_inside(tmp_path):
    assert (
        store_path(tmp_path, PurePosixPath("ex.com/a/b.html"))
        == tmp_path.resolve() / "ex.com/a/b.html"
    )


@pytest.mark.parametrize("relpath", ["../x", "a/../../x", "/etc/passwd", ".", "", "a/\x00"])
def test_store_path_refuses_paths_out_of_the_repository(tmp_path, relpath):
    with pytest.raises(UnsafePath):
        store_path(tmp_path / "repo", PurePosixPath(relpath))


def test_store_path_refuses_symlinks_out_of_the_repository(tmp_path):
    repository, outside = tmp_path / "repo", tmp_path / "outside"
    repository.mkdir()
    outside.mkdir()
    (repository / "ex.com").symlink_to(outside, target_is_directory=True)
    (repository / "file.html").symlink_to(outside / "victim.html")
    (repository / "inner").symlink_to(repository / "real", target_is_directory=True)
    (repository / "loop").symlink_to(repository / "loop")
    with pytest.raises(UnsafePath):
        store_path(repository, PurePosixPath("ex.com/index.html"))
    with pytest.raises(UnsafePath):
        store_path(repository, PurePosixPath("file.html"))
    with pytest.raises(UnsafePath):
        store_path(repository, PurePosixPath("loop/x"))
    assert store_path(repository, PurePosixPath("inner/x")) == repository.resolve() / "real/x"


def test_write_atomic(tmp_path):
    target = tmp_path / "repo/ex.com/a/b.html"
    write_atomic(target, b"<p>one</p>")
    write_atomic(target, b"<p>two</p>")
    assert target.read_bytes() == b"<p>two</p>"
    assert os.listdir(target.parent) == ["b.html"]  # no temporary file left behind
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()


def test_write_atomic_failure_keeps_old_copy_and_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "a.html"
    write_atomic(target, b"old")

    def crash(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(mirror.os, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["a.html"]


def test_write_new_writes_only_where_no_file_is(tmp_path):
    target = tmp_path / "repo/ex.com/a/b.html"
    assert write_new(target, b"<p>one</p>")  # its folders made
    assert target.read_bytes() == b"<p>one</p>"
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert not write_new(target, b"<p>two</p>")
    assert target.read_bytes() == b"<p>one</p>"
    # a hard link to another file is never written through
    (tmp_path / "original.css").write_bytes(b"a {}")
    os.link(tmp_path / "original.css", tmp_path / "repo/ex.com/linked.css")
    assert not write_new(tmp_path / "repo/ex.com/linked.css", b"changed")
    assert (tmp_path / "original.css").read_bytes() == b"a {}"
    assert not write_new(tmp_path / "repo/ex.com/a", b"over a folder")
    # nor a symlink, even one leading nowhere
    (tmp_path / "repo/ex.com/dangling.html").symlink_to(tmp_path / "elsewhere.html")
    assert not write_new(tmp_path / "repo/ex.com/dangling.html", b"through a link")
    assert not (tmp_path / "elsewhere.html").exists()
    with pytest.raises(UnsafePath):
        write_new(tmp_path / "repo/ex.com/a/b.html/c.html", b"below a file")
    assert sorted(os.listdir(target.parent)) == ["b.html"]


def test_write_atomic_refuses_a_file_where_a_folder_is_needed(tmp_path):
    write_atomic(tmp_path / "ex.com/a.html", b"page")
    with pytest.raises(UnsafePath):
        write_atomic(tmp_path / "ex.com/a.html/b.html", b"below a file")
    with pytest.raises(UnsafePath):
        write_atomic(tmp_path / "ex.com/a.html/deeper/b.html", b"below a file")
    with pytest.raises(UnsafePath):
        write_atomic(tmp_path / "ex.com", b"over a folder")
    assert (tmp_path / "ex.com/a.html").read_bytes() == b"page"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# URL-like strings that exercise escapes, dots, queries, ports and unicode.
_PIECES = st.sampled_from(
    [
        "/",
        "/",
        "//",
        ".",
        "..",
        "/./",
        "/../",
        "%",
        "%2e",
        "%2F",
        "%2f",
        "%25",
        "%41",
        "?",
        "#",
        "&",
        "=",
        "/a",
        "/b.html",
        "about",
        ".html",
        "index.html",
        "ü",
        " ",
        "\x00",
        "\n",
        "~",
        "%C3%BC",
    ]
)
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=3)), max_size=10).map("".join)
_HOSTS = st.sampled_from(
    ["ex.com", "EX.com:8080", "[::1]:81", "bücher.de", "h:80", "..", "a.b.", "browse", "Index.txt"]
)
_TYPE_EXTS = st.sampled_from([None, "html", "pdf"])


def _normalized(url: str) -> str | None:
    try:
        return normalize_url(url)
    except UrlRejected:
        return None


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return tmp_path_factory.mktemp("repository")


@settings(max_examples=500)
@given(
    st.one_of(st.builds("http://{}/{}".format, _HOSTS, _TEXT), st.text().map("http://".__add__)),
    _TYPE_EXTS,
)
def test_every_mirror_path_stays_inside_the_repository(repository, url, type_ext):
    for candidate in (_normalized(url), url):  # and the raw string: never trust the input
        if candidate is None:
            continue
        try:
            relpath = mirror_relpath(candidate, type_ext)
        except UnsafePath:
            assert candidate == url  # only raw strings may be refused
            continue
        assert relpath == mirror_relpath(candidate, type_ext)  # deterministic
        # the string form is the path's very text: no segment a path object would fold away
        assert mirror_name(candidate, type_ext) == relpath.as_posix()
        assert not relpath.is_absolute() and ".." not in relpath.parts and "." not in relpath.parts
        assert all(0 < len(part.encode()) <= 200 and "\0" not in part for part in relpath.parts)
        assert relpath.parts[0].lower() not in OWN_NAMES  # never the index, state or an output
        assert relpath.as_posix() == str(PurePosixPath(*relpath.parts))
        assert store_path(repository, relpath).is_relative_to(Path(repository).resolve())


def _inherent_collision(a: str, b: str, type_ext: str | None) -> bool:
    """The layout's own collisions (see the module docstring of tarantula.core.mirror)."""
    (path_a, _, query_a), (path_b, _, query_b) = a.partition("?"), b.partition("?")
    if query_a != query_b:
        return False
    for x, y in ((path_a, path_b), (path_b, path_a)):
        if x.endswith("/") and y == x + "index.html":
            return True
        if not query_a and type_ext and y == x + "." + type_ext:
            return True
    return False


@settings(max_examples=500)
@given(st.lists(_TEXT, min_size=2, max_size=6), _TYPE_EXTS)
def test_distinct_urls_get_distinct_paths(paths, type_ext):
    urls = {u for u in (_normalized("http://ex.com/" + p) for p in paths) if u is not None}
    owners: dict[PurePosixPath, str] = {}
    for url in sorted(urls):
        relpath = mirror_relpath(url, type_ext)
        other = owners.setdefault(relpath, url)
        assert other == url or _inherent_collision(other, url, type_ext), (other, url, relpath)


def test_distinct_urls_examples():
    urls = [
        "http://ex.com/a?b/c",
        "http://ex.com/a?b%2Fc",
        "http://ex.com/a?b%252Fc",
        "http://ex.com/a/",
        "http://ex.com/a",
        "http://ex.com/a?",
        "http://ex.com/a%2F",
        "http://ex.com/a//",
        "http://ex.com/a?x.html",
        "http://ex.com/a.html?x",
        "http://ex.com/a?x=1.html",
    ]
    relpaths = {mirror_relpath(normalize_url(u), "html") for u in urls}
    assert len(relpaths) == len({normalize_url(u) for u in urls})


@settings(max_examples=300)
@given(st.lists(st.tuples(_HOSTS, _TEXT, _TYPE_EXTS), min_size=2, max_size=8))
def test_stored_documents_never_share_a_file(repository, documents):
    """What the mirror pipeline does: the first URL to claim a path keeps it, a later one whose
    path is taken (the layout's inherent collisions) gets a disambiguated name; no two documents,
    of any hosts and types, ever end in the same file."""
    owners: dict[PurePosixPath, str] = {}
    for host, path, type_ext in documents:
        url = _normalized(f"http://{host}/{path}")
        if url is None or url in owners.values():
            continue
        relpath = mirror_relpath(url, type_ext or UNKNOWN_TYPE_EXTENSION)
        if relpath in owners:
            relpath = disambiguate(relpath, url)
        assert relpath not in owners, (owners.get(relpath), url)
        assert store_path(repository, relpath).is_relative_to(Path(repository).resolve())
        owners[relpath] = url


# Type names as servers send them, and as nobody should.
_ANY_TYPES = st.one_of(
    st.none(),
    st.sampled_from(["html", "pdf", "bin", "vnd.ms-excel", "vnd.foo.bar+xml", "x-thing", "../x"]),
    st.text(max_size=20),
)


def _plain_type(doc_type: str | None) -> str | None:
    """The type mirror_relpath is documented to treat ``doc_type`` as."""
    if not doc_type:
        return None
    return doc_type if mirror._TYPE_EXT.fullmatch(doc_type) else UNKNOWN_TYPE_EXTENSION


@settings(max_examples=500)
@given(
    st.one_of(st.builds("http://{}/{}".format, _HOSTS, _TEXT), st.text().map("http://".__add__)),
    _ANY_TYPES,
)
def test_any_type_is_accepted(url, doc_type):
    """Whatever the type, a URL maps or is refused as it would be without a type; no other error."""
    for candidate in (_normalized(url), url):
        if candidate is None:
            continue
        try:
            relpath = mirror_relpath(candidate, doc_type)
        except UnsafePath:
            assert candidate == url  # a normalized URL always maps
            with pytest.raises(UnsafePath):
                mirror_relpath(candidate, None)  # refused for the URL, not for the type
            continue
        assert relpath == mirror_relpath(candidate, _plain_type(doc_type))


@pytest.mark.parametrize(
    "documents",
    [
        [
            ("http://ex.com/release/3.11", "html"),
            ("http://ex.com/release/3.11/whatsnew.html", "html"),
        ],
        [("http://ex.com/docs/version-2.x", "html"), ("http://ex.com/docs/version-2.x/a", "html")],
        [("http://ex.com/list/page.2", "html"), ("http://ex.com/list/page.2/x.pdf", "pdf")],
        [("http://ex.com/v1.2.3", "pdf"), ("http://ex.com/v1.2.3/", "html")],
        [("http://ex.com/data.json", "html"), ("http://ex.com/data.json/meta", "json")],
    ],
)
@pytest.mark.parametrize("order", [1, -1])
def test_version_numbered_names_store_in_either_order(tmp_path, documents, order):
    stored = {}
    for url, doc_type in documents[::order]:
        relpath = mirror_relpath(url, doc_type)
        write_atomic(store_path(tmp_path, relpath), url.encode(), sync=False)
        stored[url] = relpath
    for url, doc_type in documents:
        assert stored[url] == mirror_relpath(url, doc_type)  # the same paths in either order
        assert (tmp_path / stored[url]).read_bytes() == url.encode()


def test_clash_free_without_a_clash_keeps_the_path(tmp_path):
    write_atomic(tmp_path / "ex.com/a/b.html", b"b")
    for relpath in ("ex.com/a/b.html", "ex.com/a/c.html", "ex.com/new/deep/x.pdf", "other.org/y"):
        assert clash_free(tmp_path, PurePosixPath(relpath), "http://u/") == PurePosixPath(relpath)
    for relpath in ("../x", "/etc/passwd", "a/../b", ""):
        with pytest.raises(UnsafePath):
            clash_free(tmp_path, PurePosixPath(relpath), "http://u/")


def test_clash_free_file_first_moves_the_folder(tmp_path):
    """``/a.pdf`` is stored; every document below ``/a.pdf/`` goes to one other folder."""
    write_atomic(tmp_path / "ex.com/a.pdf", b"pdf")
    relpath = clash_free(
        tmp_path, PurePosixPath("ex.com/a.pdf/b.html"), "http://ex.com/a.pdf/b.html"
    )
    assert relpath.parent.parent == PurePosixPath("ex.com") and relpath.name == "b.html"
    assert relpath.parent.name.startswith("a.pdf~")
    write_atomic(store_path(tmp_path, relpath), b"b")
    sibling = clash_free(
        tmp_path, PurePosixPath("ex.com/a.pdf/c/d.html"), "http://ex.com/a.pdf/c/d.html"
    )
    assert sibling == relpath.parent / "c/d.html"  # the same folder for every document below it
    write_atomic(store_path(tmp_path, sibling), b"d")
    assert (tmp_path / "ex.com/a.pdf").read_bytes() == b"pdf"
    again = clash_free(tmp_path, PurePosixPath("ex.com/a.pdf/b.html"), "http://ex.com/a.pdf/b.html")
    assert again == relpath  # deterministic


def test_clash_free_folder_first_moves_the_file(tmp_path):
    """``/a.pdf/b.html`` is stored; ``/a.pdf`` gets a disambiguated name beside the folder."""
    write_atomic(tmp_path / "ex.com/a.pdf/b.html", b"b")
    relpath = clash_free(tmp_path, PurePosixPath("ex.com/a.pdf"), "http://ex.com/a.pdf")
    assert relpath == disambiguate(PurePosixPath("ex.com/a.pdf"), "http://ex.com/a.pdf")
    write_atomic(store_path(tmp_path, relpath), b"pdf")
    assert relpath.suffix == ".pdf" and (tmp_path / relpath).read_bytes() == b"pdf"
    # below the folder nothing moves
    assert clash_free(tmp_path, PurePosixPath("ex.com/a.pdf/c.html"), "u") == PurePosixPath(
        "ex.com/a.pdf/c.html"
    )


def test_clash_free_also_avoids_its_own_alternatives(tmp_path):
    url = "http://ex.com/a.pdf"
    first = disambiguate(PurePosixPath("ex.com/a.pdf"), url)
    (tmp_path / "ex.com/a.pdf").mkdir(parents=True)
    (tmp_path / first).mkdir()  # someone's folder already has the alternative name
    relpath = clash_free(tmp_path, PurePosixPath("ex.com/a.pdf"), url)
    assert relpath not in (PurePosixPath("ex.com/a.pdf"), first)
    write_atomic(store_path(tmp_path, relpath), b"pdf")


_CLASHING_SEGMENTS = st.sampled_from(["a", "a.pdf", "3.11", "b.html", "index.html", "x.php", ""])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(_CLASHING_SEGMENTS, min_size=1, max_size=4).map("/".join),
            st.sampled_from(["html", "pdf", None]),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_every_document_is_stored_whatever_the_order(documents):
    """What the mirror pipeline does, on disk: the mapped path, moved off a file/folder clash, then
    disambiguated when another URL's copy holds it. Every document is stored, none overwritten."""
    with tempfile.TemporaryDirectory() as folder:
        repository = Path(folder)
        owners: dict[PurePosixPath, str] = {}
        for path, doc_type in documents:
            url = normalize_url("http://ex.com/" + path)
            if url in owners.values():
                continue
            relpath = clash_free(
                repository, mirror_relpath(url, doc_type or UNKNOWN_TYPE_EXTENSION), url
            )
            if owners.get(relpath, url) != url:
                relpath = disambiguate(relpath, url)
            write_atomic(store_path(repository, relpath), url.encode(), sync=False)
            owners[relpath] = url
        for relpath, url in owners.items():
            assert (repository / relpath).read_bytes() == url.encode()


def test_a_document_named_like_a_temporary_survives_the_sweep(tmp_path):
    url = "http://ex.com/.a.0123456789abcdef.tmp"  # the form temporaries used to have
    relpath = mirror_relpath(url, "tmp")
    assert relpath.as_posix() == "ex.com/.a.0123456789abcdef.tmp"
    write_atomic(store_path(tmp_path, relpath), b"document")
    assert sweep_temporary(tmp_path) == 0
    assert (tmp_path / relpath).read_bytes() == b"document"


def test_sweep_removes_what_write_atomic_leaves(tmp_path, monkeypatch):
    temporaries = []

    def crash(src, dst):
        temporaries.append(os.path.basename(src))
        raise KeyboardInterrupt  # as a crash: the temporary would stay

    monkeypatch.setattr(mirror.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "ex.com/.a.0123456789abcdef.tmp", b"x")
    monkeypatch.undo()
    (name,) = temporaries
    assert mirror._TEMPORARY.fullmatch(name)
    (tmp_path / "ex.com" / name).write_bytes(b"left by a crash")
    (tmp_path / "ex.com/.a.0123456789abcdef.tmp").write_bytes(b"document")
    assert sweep_temporary(tmp_path) == 1
    assert os.listdir(tmp_path / "ex.com") == [".a.0123456789abcdef.tmp"]


# Pieces that look like temporaries, old form and new, raw and escaped.
_TEMPORARY_PIECES = st.sampled_from(
    [".%%", "%%", ".%25%25", "%2E%25%25", ".a.0123456789abcdef.tmp", ".tmp", "0123456789abcdef"]
)
_TEMPORARY_TEXT = st.lists(st.one_of(_TEMPORARY_PIECES, _PIECES), max_size=8).map("".join)


@settings(max_examples=500)
@given(
    st.one_of(
        st.builds("http://{}/{}".format, _HOSTS, _TEMPORARY_TEXT),
        st.builds("http://ex.com/{}?{}".format, _TEMPORARY_TEXT, _TEMPORARY_TEXT),
        st.text().map("http://".__add__),
    ),
    _ANY_TYPES,
)
def test_no_document_name_is_a_temporary_name(url, doc_type):
    for candidate in (_normalized(url), url):
        if candidate is None:
            continue
        try:
            relpath = mirror_relpath(candidate, doc_type)
        except UnsafePath:
            continue
        names = [*relpath.parts, disambiguate(relpath, candidate).name]
        names.append(disambiguate(PurePosixPath(names[-1]), candidate).name)
        names.append(mirror._folder_alternative(relpath))
        assert not any(mirror._TEMPORARY.fullmatch(name) for name in names), names
