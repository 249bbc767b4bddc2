"""Logged-in crawls (SPEC 13): HTTP Basic and Digest credentials from a netrc file, cookies from a
cookie file and those servers set, and nothing of them leaking: checked from the server's own
request log and by a search of every file the crawl wrote (WARC files included)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import signal
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path

from tarantula.demo.server import HTML, RequestRecord, Resource, SiteServer
from tests.helpers.crawls import run_crawl, start_crawl, wait_for, write_conf

USER, PASSWORD = "ada", "s3cret-pw-9271"
SESSION = "SESSIONVALUE4411"
TRACKER = "TRACKERVALUE8802"
REALM, NONCE = "private area", "dcd98b7102dd2f0e8b11d0f600bfb0c093"


def _page(title: str, body: str = "") -> Resource:
    html = f"<!DOCTYPE html><title>{title}</title><h1>{title}</h1>{body}"
    return Resource(html.encode(), headers={"Content-Type": HTML})


def _digest_ok(header: str, method: str) -> bool:
    """Whether a Digest ``Authorization`` answers the challenge with the right password."""
    if not header.startswith("Digest "):
        return False
    fields = urllib.request.parse_keqv_list(urllib.request.parse_http_list(header[7:]))
    ha1 = hashlib.md5(f"{USER}:{REALM}:{PASSWORD}".encode()).hexdigest()
    ha2 = hashlib.md5(f"{method}:{fields['uri']}".encode()).hexdigest()
    expected = hashlib.md5(
        f"{ha1}:{NONCE}:{fields['nc']}:{fields['cnonce']}:{fields['qop']}:{ha2}".encode()
    ).hexdigest()
    return fields.get("username") == USER and fields.get("response") == expected


def serve_private(web: SiteServer) -> str:
    """``private.test``: a home page that sets a cookie and links to a Basic area (with a redirect
    from it to ``other.test``), a Digest area, a members' page that needs the session cookie and a
    page on ``other.test``, which links back."""
    other = web.url("other.test", "/")
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

    def answer(request: RequestRecord) -> Resource:
        target, auth = request.target, request.headers.get("Authorization", "")
        if target == "/":
            links = ('<a href="/basic/a.html">a</a> <a href="/digest/b.html">b</a> '
                     f'<a href="/members/c.html">c</a> <a href="{other}x.html">x</a> '
                     '<a href="/basic/leave">leave</a>')  # fmt: skip
            page = _page("Home", links)
            page.headers["Set-Cookie"] = f"tracker={TRACKER}; Path=/"
            return page
        if target.startswith("/basic/"):
            if auth != basic:
                return Resource(b"no", 401, {"WWW-Authenticate": 'Basic realm="basic area"'})
            if target == "/basic/leave":  # a redirect out of the area, to another host
                return Resource(b"", 302, {"Location": f"{other}landing.html"})
            return _page("Basic inside", f'<p>{target}</p><a href="/basic/more.html">more</a>')
        if target.startswith("/digest/"):
            if not _digest_ok(auth, request.method):
                challenge = f'Digest realm="{REALM}", qop="auth", nonce="{NONCE}", opaque="5ccc"'
                return Resource(b"no", 401, {"WWW-Authenticate": challenge})
            return _page("Digest inside")
        if target.startswith("/members/"):
            if f"session={SESSION}" not in request.headers.get("Cookie", ""):
                return Resource(b"members only", 403, {"Content-Type": "text/plain"})
            return _page("Members inside")
        return Resource(b"not here", 404, {"Content-Type": "text/plain"})

    web.add("private.test", "*", answer)
    back = f'<a href="{web.url("private.test", "/")}">back</a>'
    web.add("other.test", "/x.html", _page("Other", back))
    web.add("other.test", "/landing.html", _page("Landing", back))
    return web.url("private.test", "/")


def as_written(paths: Iterable[Path]) -> Iterator[tuple[Path, bytes]]:
    """Each file of ``paths`` with its bytes; a WARC file's (``.gz``) decompressed: its records
    as written, which a search of the compressed bytes would not see."""
    for path in paths:
        if path.is_file():
            data = path.read_bytes()
            yield path, gzip.decompress(data) if path.suffix == ".gz" else data


def credential_files(folder: Path, web: SiteServer, mode: int = 0o600) -> tuple[Path, Path]:
    netrc = folder / "netrc"
    netrc.write_text(f"machine private.test\n  login {USER}\n  password {PASSWORD}\n")
    netrc.chmod(mode)
    cookies = folder / "cookies.txt"
    cookies.write_text(
        f"# Netscape HTTP Cookie File\nprivate.test\tFALSE\t/\tFALSE\t0\tsession\t{SESSION}\n"
    )
    return netrc, cookies


def test_a_logged_in_crawl_stores_the_private_pages_and_leaks_nothing(web, tmp_path):
    home = serve_private(web)
    netrc, cookies = credential_files(tmp_path, web)
    conf = write_conf(tmp_path, [home], scope="free-spanning", warc=True,
                      netrc=str(netrc), cookies=str(cookies))  # fmt: skip
    crawl = run_crawl(conf)
    assert crawl.status == 0, crawl.process.stdout
    titles = {record.url.split("/", 3)[3]: record.title for record in crawl.records}
    assert titles["basic/a.html"] == "Basic inside"
    assert titles["basic/more.html"] == "Basic inside"
    assert titles["digest/b.html"] == "Digest inside"
    assert titles["members/c.html"] == "Members inside"
    private = [r for r in web.requests if r.host.startswith("private.test")]
    others = [r for r in web.requests if r.host.startswith("other.test")]
    assert {r.target for r in others} == {"/x.html", "/landing.html", "/robots.txt"}
    leave = next(r for r in private if r.target == "/basic/leave")
    assert leave.headers["Authorization"].startswith("Basic ")  # then redirected: dropped
    for record in others:  # nothing of private.test's goes to another host
        assert "Authorization" not in record.headers, record
        assert SESSION not in record.headers.get("Cookie", ""), record
        assert TRACKER not in record.headers.get("Cookie", ""), record
    # Credentials only after the origin asked for them; the Basic area's second page at once.
    first_basic = next(r for r in private if r.target == "/basic/a.html")
    assert "Authorization" not in first_basic.headers
    more = [r for r in private if r.target == "/basic/more.html"]
    assert len(more) == 1 and more[0].headers["Authorization"].startswith("Basic ")
    assert any(TRACKER in r.headers.get("Cookie", "") for r in private)  # a cookie it set, kept
    # No file of the repository shows the password, the Basic token or a cookie's value.
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode())
    redacted = 0
    for path, data in as_written(crawl.repository.rglob("*")):
        if path.suffix == ".gz":  # a WARC file
            redacted += data.count(b"[redacted]")
        for secret in (PASSWORD.encode(), token, SESSION.encode(), TRACKER.encode()):
            assert secret not in data, (path, secret)
    assert SESSION not in crawl.log and PASSWORD not in crawl.log
    assert redacted > 0  # the WARC records of the private pages' exchanges, their values redacted


def test_a_netrc_others_can_read_or_a_missing_cookie_file_is_refused(web, tmp_path):
    home = serve_private(web)
    netrc, _ = credential_files(tmp_path, web, mode=0o644)
    conf = write_conf(tmp_path, [home], netrc=str(netrc), cookies=str(tmp_path / "none.txt"))
    crawl = run_crawl(conf)
    assert crawl.status == 2
    errors = [line for line in crawl.process.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 2, crawl.process.stderr
    assert errors[0].startswith(f"{conf}:") and "is readable by others (mode 644)" in errors[0]
    assert "cannot read the cookie file" in errors[1]
    assert "Traceback" not in crawl.process.stderr
    assert not web.requests  # nothing fetched


FORM_PASSWORD = "form-pw-5519"
SESSION_REQUESTS = 4  # a session lasts this many pages


def serve_forum(
    web: SiteServer, session_requests: int = SESSION_REQUESTS
) -> tuple[str, dict[str, int]]:
    """``forum.test``: a login form with a CSRF token; a session cookie that lasts
    ``session_requests`` pages, after which a page redirects to the form; eight pages that need
    it, each with a "Sign out" link. Returns the home URL and the login counts."""
    sessions: dict[str, int] = {}
    tokens: set[str] = set()
    counts = {"logins": 0, "forms": 0}

    def answer(request: RequestRecord) -> Resource:
        target = request.target
        if target == "/login" and request.method == "GET":
            counts["forms"] += 1
            token = f"csrf{len(tokens)}x"
            tokens.add(token)
            form = ('<form method="post" action="/login">'
                    f'<input type="hidden" name="csrf" value="{token}">'
                    '<input name="user"><input type="password" name="password"></form>')  # fmt: skip
            return _page("Log in", form)
        if target == "/login":  # the form sent
            fields = dict(pair.split("=", 1) for pair in request.body.decode().split("&"))
            if fields.get("csrf") not in tokens or fields.get("password") != FORM_PASSWORD:
                return _page(
                    "Log in", '<p>wrong</p><form><input type="password" name="password"></form>'
                )
            counts["logins"] += 1
            sid = f"sid{counts['logins']}q"
            sessions[sid] = session_requests
            return Resource(b"", 302, {"Location": "/", "Set-Cookie": f"sid={sid}; Path=/"})
        sid = request.headers.get("Cookie", "").partition("sid=")[2].partition(";")[0]
        if sessions.get(sid, 0) <= 0:
            return Resource(b"", 302, {"Location": "/login"})
        sessions[sid] -= 1
        if target == "/logout":
            sessions.pop(sid)
            return _page("Logged out")
        links = " ".join(f'<a href="/p{n}.html">p{n}</a>' for n in range(1, 9))
        return _page(f"Forum {target}", f'<p>Hello ada</p>{links} <a href="/logout">Sign out</a>')

    web.add("forum.test", "*", answer)
    return web.url("forum.test", "/"), counts


def test_a_form_login_lasts_the_crawl_and_comes_back_when_the_session_expires(
    web, tmp_path, monkeypatch
):
    home, counts = serve_forum(web)
    monkeypatch.setenv("FORUM_PASSWORD", FORM_PASSWORD)
    conf = write_conf(tmp_path, [home], warc=True, login_url=web.url("forum.test", "/login"),
                      login_fields=["user=ada", "password=$FORUM_PASSWORD"],
                      logged_in_text="Hello ada")  # fmt: skip
    crawl = run_crawl(conf)
    assert crawl.status == 0, crawl.process.stdout
    pages = {record.url.rsplit("/", 1)[1]: record.title for record in crawl.records}
    assert pages == {"": "Forum /", **{f"p{n}.html": f"Forum /p{n}.html" for n in range(1, 9)}}
    assert counts["logins"] >= 2  # the session expired mid-crawl: logged in again
    targets = [r.target for r in web.requests]
    assert "/logout" not in targets  # never logged out
    login_records = 0
    for path, data in as_written(crawl.repository.rglob("*")):
        if path.suffix == ".gz":  # a WARC file
            login_records += data.count(b"csrf=[redacted]&user=[redacted]&password=[redacted]")
        assert FORM_PASSWORD.encode() not in data, path
    assert login_records == counts["logins"]  # each login's request archived, its values redacted
    assert crawl.stats["tarantula/login/done"] == counts["logins"]


def test_a_login_that_fails_stops_the_crawl_with_one_line(web, tmp_path, monkeypatch):
    home, counts = serve_forum(web)
    monkeypatch.setenv("FORUM_PASSWORD", "not-it")
    conf = write_conf(tmp_path, [home], login_url=web.url("forum.test", "/login"),
                      login_fields=["user=ada", "password=$FORUM_PASSWORD"])  # fmt: skip
    crawl = run_crawl(conf)
    assert crawl.status == 1
    assert "Exit status 1: the login failed" in crawl.process.stdout + crawl.process.stderr
    assert crawl.records == []  # no login page stored
    assert counts["logins"] == 0


def test_a_password_written_in_the_configuration_is_refused(web, tmp_path):
    home, _ = serve_forum(web)
    conf = write_conf(tmp_path, [home], login_url=web.url("forum.test", "/login"),
                      login_fields=["user=ada", "password=hunter2"])  # fmt: skip
    crawl = run_crawl(conf)
    assert crawl.status == 2
    (error,) = [line for line in crawl.process.stderr.splitlines() if ": error: " in line]
    assert error.startswith(f"{conf}:") and "holds a password written in the file" in error
    assert not web.requests


def test_a_logged_in_crawl_killed_and_resumed_logs_in_again_and_loses_nothing(
    web, tmp_path, monkeypatch
):
    home, counts = serve_forum(web)
    monkeypatch.setenv("FORUM_PASSWORD", FORM_PASSWORD)
    conf = write_conf(tmp_path, [home], delay=0.1, login_url=web.url("forum.test", "/login"),
                      login_fields=["user=ada", "password=$FORUM_PASSWORD"],
                      logged_in_text="Hello ada")  # fmt: skip
    crawling = start_crawl(conf)
    wait_for(lambda: sum(r.target.startswith("/p") for r in web.requests) >= 3, timeout=120)
    os.kill(crawling.pid, signal.SIGKILL)
    crawling.wait()
    logins = counts["logins"]
    crawl = run_crawl(conf)  # the resume: logs in before anything else
    assert crawl.status == 0, crawl.process.stdout
    assert counts["logins"] > logins
    titles = sorted(record.title for record in crawl.records)
    assert titles == sorted(["Forum /", *(f"Forum /p{n}.html" for n in range(1, 9))])
    assert "/logout" not in [r.target for r in web.requests]
