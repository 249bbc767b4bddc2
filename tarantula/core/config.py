"""Parse the crawler configuration file into a frozen, validated :class:`CrawlConfig`.

The grammar, as users write it::

    # a comment runs to the end of the line
    <crawler-options>                       # opens a section
    starting-points = { "http://a.example/", http://b.example/, };
    scope = domain-scope;  delay = 0.5;     # several statements may share a line

* Keys and section names are case-insensitive, and ``_`` equals ``-`` in them. Keys before any
  section belong to ``<crawler-options>``.
* A value is a quoted string (backslashes are kept literally: they are regex escapes), a bare word
  or number, or a list ``{ item, item, ... }`` that may span lines and end with a trailing comma.
* A bare list item runs to the next ``,`` or ``}`` outside ``()``, ``[]`` and ``{}`` (so the
  regex ``.{0,4}`` stays whole), to a comment or to the end of its line, and is trimmed. Escaped
  brackets (``\\{``) do not nest, and a ``[...]`` class follows the regex rules (``[]}]`` is one
  class). Brackets that do not balance by the end of the line do not nest at all, so they cannot
  carry the item into the next statement.
* ``#`` starts a comment only at the start of a line or after white space, outside quotes: the
  bare regex ``^#.*`` keeps its ``#``, and ``a = b;#x`` is an error (``#x`` is not a comment).
* The file is UTF-8 (a BOM is allowed); a file that is not valid UTF-8 is read as Windows-1253,
  the code page Greek users' editors save in, and :attr:`CrawlConfig.warnings` says so.

Every problem found is reported at once, with file, line and column, as :class:`ConfigError`.
"""

from __future__ import annotations

import codecs
import importlib.util
import os
import re
import shutil
from bisect import bisect_right
from dataclasses import dataclass, replace
from pathlib import Path

from tarantula import __version__
from tarantula.core.configkeys import KEYS
from tarantula.core.configreader import Reader
from tarantula.core.credentials import cookies_problem, netrc_problem


@dataclass(frozen=True)
class ConfigProblem:
    """One problem in a configuration file, at a 1-based line and character column."""

    file: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: error: {self.message}"


class ConfigError(Exception):
    """The configuration file is unusable; ``problems`` lists every problem in file order."""

    def __init__(self, problems: list[ConfigProblem], warnings: tuple[str, ...] = ()) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = list(problems)
        self.warnings = warnings  # as in CrawlConfig.warnings: worth showing with the errors


@dataclass(frozen=True)
class CrawlConfig:
    """A validated crawler configuration. Relative paths are made absolute on creation.

    ``warnings`` holds what the user should be told although the file loaded, one line each, such
    as ``crawl.conf:3:9: warning: not valid UTF-8; read as Windows-1253``.
    """

    path: Path
    starting_points: tuple[str, ...]
    accept_list: tuple[re.Pattern[str], ...] = ()
    reject_list: tuple[re.Pattern[str], ...] = ()
    max_page_number: int = 0
    scope: str = "host-scope"
    traversal_algorithm: str = "bfs"
    repository: Path = Path("repository")
    time_limit: float = 0.0
    delay: float = 1.0
    delay_factor: float = 0.0
    host_concurrency: int = 1
    host_failures: int = 5
    user_agent: str = f"tarantula/{__version__}"
    max_depth: int = 20
    max_url_length: int = 2048
    max_document_size: int = 10485760
    max_outlinks: int = 0  # no cap: every link of a page is listed and followed (SPEC 6)
    max_path_repetitions: int = 2
    max_retry_after: float = 600.0
    # SPEC 6: pages whose text is nearly a stored page's (SimHash within this many bits): listed
    # (mark), also left out of the mirror and the index (skip), or not looked for (off)
    near_duplicates: str = "mark"
    near_duplicate_distance: int = 3
    # SPEC 6: URL patterns whose pages keep bringing duplicates (this many in a row) are learned
    # as rules, and their links no longer fetched; off by default (a crawl fetches what its
    # rules say, as the assignment asks)
    learn_traps: bool = False
    trap_threshold: int = 8
    log_file: Path | None = None
    log_level: int = 1
    period: float = 72.0
    threads: int = 8
    processes: int = 1  # SPEC 6: one crawl on this many processes of the machine (0: one per core)
    resolve: tuple[tuple[str, str], ...] = ()
    resolve_only: bool = False
    sort_query: bool = False
    render_list: tuple[re.Pattern[str], ...] = ()
    render_wait: float = 5.0
    browser: str = "chromium"
    sitemaps: bool = False  # SPEC 12: URLs from the hosts' sitemaps
    warc: bool = False  # SPEC 11: every HTTP exchange in <repository>/warc/
    browsable: bool = False  # SPEC 11: <repository>/browse/, links made relative
    wacz: bool = False  # SPEC 11: the WARC files packed as <repository>/<name>.wacz every run
    wacz_title: str = ""  # its title in datapackage.json ("": the seeds' host names)
    wacz_description: str = ""  # its description ("": the dates its captures span)
    # SPEC 6, 11: what a stored page needs to render, fetched and kept (None: yes when browsable
    # or warc is), at most max_requisites of them in the whole crawl (0: no bound)
    page_requisites: bool | None = None
    max_requisites: int = 100000
    report: bool = True  # SPEC 11: <repository>/report.html at the end of every run
    redis: str = ""  # SPEC 9: the Redis server workers share the crawl through ("": one process)
    lease_timeout: float = 60.0  # SPEC 9: seconds before a dead worker's URLs go back
    # SPEC 13: HTTP credentials per host (a netrc file), cookies to start from (a Netscape file)
    netrc: Path | None = None
    cookies: Path | None = None
    # SPEC 13: a form login before the crawl and whenever the session is lost: the form at
    # login_url, filled with login_fields (a "$NAME" value from the environment), and the text a
    # page shows only when logged in ("": the form's return alone tells)
    login_url: str = ""
    login_fields: tuple[tuple[str, str], ...] = ()
    logged_in_text: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def logged_in(self) -> bool:
        """Whether the crawl logs in (SPEC 13): credentials, cookies or a form login."""
        return self.netrc is not None or self.cookies is not None or bool(self.login_url)

    def login_values(self) -> dict[str, str]:
        """The login form's fields, ``$NAME`` values read from the environment now."""
        return {name: os.environ.get(value[1:], "") if value.startswith("$") else value
                for name, value in self.login_fields}  # fmt: skip

    def __post_init__(self) -> None:
        # Relative paths in the file mean "next to the file", not "in the current directory".
        path = Path(self.path).absolute()
        object.__setattr__(self, "path", path)
        if self.page_requisites is None:
            object.__setattr__(self, "page_requisites", self.browsable or self.warc)
        # normpath folds "conf/../repository" to "repository" without following symlinks.
        object.__setattr__(
            self, "repository", Path(os.path.normpath(path.parent / self.repository))
        )
        for name in ("netrc", "cookies"):
            if (value := getattr(self, name)) is not None:
                object.__setattr__(self, name, path.parent / Path(value).expanduser())
        if self.log_file is not None:
            object.__setattr__(
                self, "log_file", Path(os.path.normpath(path.parent / self.log_file))
            )


#: The optional extras (SPEC 1): extra -> the packages it installs that the crawl imports.
EXTRAS = {
    "redis": ("redis", "hiredis"),
    "warc": ("warcio", "cdxj_indexer"),
    "playwright": ("playwright", "scrapy_playwright"),
    "scrapyd": ("scrapyd",),
}


def missing_extra(feature: str, extra: str) -> str | None:
    """Why ``feature`` cannot be used here, when a package of its optional ``extra`` is missing
    (tests/integration/test_extras.py runs crawls with the extras' packages hidden)."""
    missing = [name for name in EXTRAS[extra] if not _installed(name)]
    if not missing:
        return None
    return (
        f"{feature} needs the {extra} extra, which is not installed (no {', '.join(missing)}): "
        f"pip install 'tarantula[{extra}]'"
    )


def _installed(package: str) -> bool:
    """Whether ``package`` can be imported here (found, not imported: start-up stays light)."""
    try:
        return importlib.util.find_spec(package) is not None
    except ImportError:  # a finder that knows it is missing says so by raising
        return False


def renderer_problem(browser: str) -> str | None:
    """Why pages cannot be rendered (SPEC 10) with ``browser`` here, or None when they can: the
    ``playwright`` extra must be installed, and the browser must be an executable file (a path, or
    a name looked up on PATH)."""
    if problem := missing_extra("'render-list'", "playwright"):
        return problem
    if shutil.which(browser) is None:
        return (
            f"'render-list' needs a Chromium browser, and '{browser}' is not an executable file "
            "(install Debian's chromium package, or set 'browser' to its path)"
        )
    return None


def parse_config(text: str, path: str | Path, *, display_name: str | None = None) -> CrawlConfig:
    """Parse configuration ``text`` read from ``path``; raise ConfigError listing every problem.

    ``display_name`` is how problems name the file (default: ``path`` as given).
    """
    reader = Reader(text.removeprefix("\ufeff"))
    reader.read()
    for key in KEYS.values():
        if key.required and key.name not in reader.first_seen:
            reader.error(0, f"missing required key '{key.name}' in <{key.section}>")
    if reader.values.get("render_list"):
        problem = renderer_problem(str(reader.values.get("browser", "chromium")))
        if problem:
            reader.error(
                reader.first_seen.get("browser", reader.first_seen["render-list"]), problem
            )
    extras = (("warc", "warc = yes", "warc"), ("wacz", "wacz = yes", "warc"),
              ("redis", "'redis'", "redis"))  # fmt: skip
    for name, feature, extra in extras:
        if reader.values.get(name) and (problem := missing_extra(feature, extra)):
            reader.error(reader.first_seen[name], problem)
    if reader.values.get("processes", 1) != 1 and reader.values.get("redis"):
        reader.error(
            reader.first_seen["processes"],
            "processes runs one crawl on this machine's cores; a crawl shared through Redis runs "
            "one process per worker: start more workers instead",
        )
    here = Path(path).absolute().parent
    for name, problem_of in (("netrc", netrc_problem), ("cookies", cookies_problem)):
        if (value := reader.values.get(name)) is not None and (
            problem := problem_of(here / Path(str(value)).expanduser())
        ):
            reader.error(reader.first_seen[name], problem)
    fields = reader.values.get("login_fields") or ()
    if fields and not reader.values.get("login_url"):
        reader.error(
            reader.first_seen["login-fields"], "login-fields fill the form at login-url: set it"
        )
    if reader.values.get("login_url") and "login-fields" not in reader.first_seen:
        reader.error(reader.first_seen["login-url"], "a form login needs login-fields")
    for _, value in fields:  # type: ignore[attr-defined]
        if value.startswith("$") and value[1:] not in os.environ:
            reader.error(
                reader.first_seen["login-fields"],
                f"login-fields: the environment variable {value[1:]} is not set",
            )
    if reader.values.get("wacz") and not reader.values.get("warc"):
        reader.error(
            reader.first_seen["wacz"], "wacz = yes packs the WARC files: it needs warc = yes"
        )
    if reader.errors:
        display = str(path) if display_name is None else display_name
        starts = [0, *(m.end() for m in re.finditer("\n", reader.text))]
        problems = []
        for pos, message in sorted(reader.errors, key=lambda error: error[0]):
            line = bisect_right(starts, pos)
            problems.append(ConfigProblem(display, line, pos - starts[line - 1] + 1, message))
        raise ConfigError(problems)
    # Each value was converted for its field by the key table, which mypy cannot follow.
    return CrawlConfig(path=Path(path), **reader.values)  # type: ignore[arg-type]


def _line_col(text: str) -> tuple[int, int]:
    """The 1-based line and column of the character that follows ``text``."""
    return text.count("\n") + 1, len(text) - text.rfind("\n")


def decode_config(data: bytes, display: str) -> tuple[str, tuple[str, ...]]:
    """The text of a configuration file's bytes, and the warnings about how it was read.

    The file is UTF-8, a BOM allowed; a file that is not valid UTF-8 is read as Windows-1253, the
    code page Greek users' editors save in, with a warning that points at its first byte that is
    not UTF-8. Bytes that are neither raise :class:`ConfigError` at the first of them, in the
    encoding that reads further, which is the one the file was most likely meant to be in.

    >>> decode_config("# Ελληνικά".encode("cp1253"), "c.conf")
    ('# Ελληνικά', ('c.conf:1:3: warning: not valid UTF-8; read as Windows-1253',))
    >>> try:
    ...     decode_config(b"a\\n\\x81", "c.conf")
    ... except ConfigError as exc:
    ...     print(exc)
    c.conf:2:1: error: the file is neither UTF-8 nor Windows-1253: byte 0x81 is valid in neither
    """
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8"), ()
    except UnicodeDecodeError as exc:
        utf8_bad = exc.start
    try:
        text = data.decode("cp1253")
    except UnicodeDecodeError as exc:
        bad, what = exc.start, "is valid in neither"
        if utf8_bad > bad:
            bad, what = utf8_bad, "is not valid UTF-8"
        elif bad > utf8_bad:
            what = "is undefined in Windows-1253"
        before = data[:bad].decode("utf-8" if bad == utf8_bad else "cp1253")
        message = f"the file is neither UTF-8 nor Windows-1253: byte 0x{data[bad]:02X} {what}"
        raise ConfigError([ConfigProblem(display, *_line_col(before), message)]) from None
    line, col = _line_col(text[:utf8_bad])  # Windows-1253 has one character per byte
    return text, (f"{display}:{line}:{col}: warning: not valid UTF-8; read as Windows-1253",)


def load_config(path: str | Path) -> CrawlConfig:
    """Read and parse the configuration file at ``path``, decoded by :func:`decode_config`."""
    display = str(path)
    try:
        data = Path(path).read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = getattr(exc, "strerror", None) or str(exc)
        problem = ConfigProblem(display, 1, 1, f"cannot read the configuration file: {reason}")
        raise ConfigError([problem]) from None
    text, warnings = decode_config(data, display)
    try:
        config = parse_config(text, path, display_name=display)
    except ConfigError as exc:
        # Text read in the wrong encoding may be what went wrong: the warning helps then.
        raise ConfigError(exc.problems, warnings) from None
    return replace(config, warnings=warnings) if warnings else config
