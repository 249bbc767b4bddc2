"""Credentials and cookies for logged-in crawls (SPEC 13), read from the files the configuration
names, and what no output may show of them.

A netrc file (``machine``, ``login``, ``password``, ``default``: the format wget and curl read) is
read by the standard library's :mod:`netrc`; a Netscape cookie file (a browser's export, ``wget
--save-cookies``) by :class:`http.cookiejar.MozillaCookieJar`. A file that cannot be used is
refused before the crawl, with the reason (:func:`netrc_problem`, :func:`cookies_problem`).

>>> redact("Authorization", "Basic dXNlcjpwYXNz")
'[redacted]'
>>> redact("Set-Cookie", "session=abc123; Path=/; HttpOnly")
'session=[redacted]; Path=/; HttpOnly'
>>> redact("Accept", "*/*")
'*/*'
"""

from __future__ import annotations

import netrc
import stat
import tempfile
import zlib
from http.cookiejar import Cookie, LoadError, MozillaCookieJar
from pathlib import Path

#: Request and response headers whose values are credentials.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
REDACTED = "[redacted]"


def redact(name: str, value: str) -> str:
    """What an output may show of header ``name``'s ``value``: a credential is ``[redacted]``, a
    cookie a server sets keeps its name and attributes."""
    lowered = name.lower()
    if lowered in SECRET_HEADERS:
        return REDACTED
    if lowered == "set-cookie":
        pair, semicolon, attributes = value.partition(";")
        cookie, equals, _ = pair.partition("=")
        return f"{cookie}{equals}{REDACTED}{semicolon}{attributes}" if equals else REDACTED
    return value


def redact_form(body: bytes, content_type: bytes | None) -> bytes:
    """A login form's fields as sent with every value ``[redacted]`` and the names kept (the
    user, the password and the form's token alike); a body not URL-encoded is ``[redacted]``
    whole (a text/plain form's values may hold its separators).

    >>> redact_form(b"csrf=x1&user=ada&password=p%40ss&remember", b"application/x-www-form-urlencoded")
    b'csrf=[redacted]&user=[redacted]&password=[redacted]&remember'
    >>> redact_form(b"user=ada\\npassword=a&b", b"text/plain")
    b'[redacted]'
    """
    hidden = REDACTED.encode()
    if (content_type or b"").split(b";")[0].strip().lower() != b"application/x-www-form-urlencoded":
        return hidden
    return b"&".join(
        name + b"=" + hidden if equals else name
        for name, equals, _ in (field.partition(b"=") for field in body.split(b"&"))
    )


def netrc_problem(path: Path) -> str | None:
    """Why the netrc file at ``path`` cannot be used, None when it can: it must exist, be readable
    by its owner alone (as curl warns and wget's documentation asks) and parse."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"cannot read the netrc file {path}: {exc.strerror}"
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return (
            f"the netrc file {path} is readable by others (mode {stat.S_IMODE(mode):o}): "
            f"make it the owner's alone (chmod 600 {path})"
        )
    try:
        netrc.netrc(str(path))
    except netrc.NetrcParseError as exc:
        return f"the netrc file {path} cannot be read: {exc.msg} (line {exc.lineno})"
    except OSError as exc:
        return f"cannot read the netrc file {path}: {exc.strerror}"
    return None


def read_netrc(path: Path) -> netrc.netrc:
    return netrc.netrc(str(path))


def cookies_problem(path: Path) -> str | None:
    """Why the Netscape cookie file at ``path`` cannot be used, None when it can."""
    try:
        read_cookies(path)
    except LoadError as exc:
        return f"the cookie file {path} is not a Netscape cookie file: {exc}"
    except OSError as exc:
        return f"cannot read the cookie file {path}: {exc.strerror}"
    return None


def cookie_line(cookie: Cookie) -> tuple[str, bytes]:
    r"""A cookie as a crawl keeps it: its key (domain, path and name) and its Netscape line,
    compressed (so that a search of the state for a session's value finds nothing).

    >>> key, kept = cookie_line(line_cookie(zlib.compress(b"h.test\tFALSE\t/\tTRUE\t0\tsid\tabc")))
    >>> key, zlib.decompress(kept)
    ('h.test\t/\tsid', b'h.test\tFALSE\t/\tTRUE\t0\tsid\tabc')
    """
    dotted = "TRUE" if cookie.domain.startswith(".") else "FALSE"
    line = "\t".join((cookie.domain, dotted, cookie.path, "TRUE" if cookie.secure else "FALSE",
                      str(cookie.expires or 0), cookie.name, cookie.value or ""))  # fmt: skip
    return f"{cookie.domain}\t{cookie.path}\t{cookie.name}", zlib.compress(line.encode("utf-8"))


def line_cookie(kept: bytes) -> Cookie:
    """The cookie of a line :func:`cookie_line` made (an expiry of 0: a session cookie)."""
    domain, _, path, secure, expires, name, value = (
        zlib.decompress(kept).decode("utf-8").split("\t", 6)
    )
    dotted = domain.startswith(".")
    until = int(expires) or None
    return Cookie(0, name, value, None, False, domain, dotted, dotted, path, True,
                  secure == "TRUE", until, until is None, None, None, {})  # fmt: skip


def read_cookies(path: Path) -> MozillaCookieJar:
    """The cookies of a Netscape cookie file, session cookies and expired ones included (the
    jar's policy decides what is sent; an expiry of 0 is a session cookie's, as browsers and curl
    write it). wget writes its first line ``# HTTP cookie file.``, which
    the standard library's reader, wanting ``# Netscape HTTP Cookie File``, refuses: it is read
    as the same format."""
    text = path.read_text(encoding="utf-8", errors="replace")
    first, newline, rest = text.partition("\n")
    if first.lower().startswith(("# http cookie file", "# netscape http cookie file")):
        text = "# Netscape HTTP Cookie File" + newline + rest
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as copy:
        copy.write(text)
        copy.flush()
        jar = MozillaCookieJar(copy.name)
        jar.load(ignore_discard=True, ignore_expires=True)
    jar.filename = str(path)
    for cookie in jar:
        if cookie.expires == 0:  # a session cookie, as browsers and curl export one
            cookie.expires, cookie.discard = None, True
    return jar
