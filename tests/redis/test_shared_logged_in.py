"""A logged-in crawl (SPEC 13) shared through Redis: two workers, each logged in with the form on
one site and answering HTTP Basic and Digest challenges from a netrc file on another, one cookie
jar (the crawl's, in Redis, started from a cookie file), every private page stored once with its
logged-in content, no credentials sent to any other host, and nothing of them in any file the
workers wrote (WARC files included, decompressed)."""

from __future__ import annotations

import base64
from pathlib import Path

from tarantula.core.index import parse_index
from tests.helpers.shared import finish, shared_conf, start_worker
from tests.integration.test_logged_in import (
    FORM_PASSWORD,
    PASSWORD,
    SESSION,
    TRACKER,
    USER,
    as_written,
    credential_files,
    serve_forum,
    serve_private,
)


def _secrets_written(files: list[Path], secrets: list[bytes]) -> tuple[list, int]:
    """The (file, secret) pairs of ``files`` that show a secret, WARC files searched decompressed,
    and how many redacted values the WARC files hold."""
    found, redacted = [], 0
    for path, data in as_written(files):
        if path.suffix == ".gz":  # a WARC file
            redacted += data.count(b"[redacted]")
        found += [(path.name, secret) for secret in secrets if secret in data]
    return found, redacted


def test_two_workers_log_in_and_store_every_private_page_once(
    web, tmp_path, redis_server, monkeypatch
):
    # A session that outlasts the crawl: one that ends after a count of pages (the one-process
    # test's) can be used up by the other worker between a new login and the page asked again,
    # which then shows the session lost twice and stops the crawl (see SPEC 13's notes).
    home, counts = serve_forum(web, session_requests=1000)
    private = serve_private(web)  # Basic and Digest areas from the netrc; other.test gets none
    netrc, cookies = credential_files(tmp_path, web)  # the netrc mode 0600
    monkeypatch.setenv("FORUM_PASSWORD", FORM_PASSWORD)
    conf = shared_conf(tmp_path, [home, private], redis_server, delay=0.05, warc=True,
                       scope="free-spanning", netrc=str(netrc), cookies=str(cookies),
                       login_url=web.url("forum.test", "/login"),
                       login_fields=["user=ada", "password=$FORUM_PASSWORD"],
                       logged_in_text="Hello ada")  # fmt: skip
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    records = list(parse_index((tmp_path / "repo" / "index.txt").read_text(encoding="utf-8")))
    urls = [record.url for record in records]
    assert len(urls) == len(set(urls)), urls  # each page once
    forum = sorted(r.title for r in records if r.url.startswith(home))
    assert forum == sorted(["Forum /", *(f"Forum /p{n}.html" for n in range(1, 9))])  # logged in
    titles = {r.url.split("/", 3)[3]: r.title for r in records if r.url.startswith(private)}
    assert titles == {"": "Home", "basic/a.html": "Basic inside",
                      "basic/more.html": "Basic inside", "digest/b.html": "Digest inside",
                      "members/c.html": "Members inside"}  # fmt: skip
    assert counts["logins"] >= 1
    assert "/logout" not in [r.target for r in web.requests]
    # The server's own log: each private URL answered once, to the credentials of its area (the
    # redirect out of the Basic area too: its Authorization dropped on the way to other.test).
    private_requests = [r for r in web.requests if r.host.startswith("private.test")]
    for target, status, scheme in (("/basic/a.html", 200, "Basic "),
                                   ("/basic/more.html", 200, "Basic "),
                                   ("/basic/leave", 302, "Basic "),
                                   ("/digest/b.html", 200, "Digest ")):  # fmt: skip
        answered = [r for r in private_requests if r.target == target and r.status == status]
        assert len(answered) == 1, (target, private_requests)
        assert answered[0].headers["Authorization"].startswith(scheme), answered[0]
    others = [r for r in web.requests if not r.host.startswith("private.test")]
    other = {r.target for r in others if r.host.startswith("other.test")}
    assert other == {"/x.html", "/landing.html", "/robots.txt"}  # /landing.html: the redirect
    for record in others:  # nothing of private.test's goes to another host
        assert "Authorization" not in record.headers, record
        assert SESSION not in record.headers.get("Cookie", ""), record
        assert TRACKER not in record.headers.get("Cookie", ""), record
    client = redis_server.client()
    jars = [key for key in client.keys("*cookies") if key.endswith(b"cookies")]
    assert len(jars) == 1
    jar = sorted(client.hkeys(jars[0]))
    assert jar == [b"forum.test\t/\tsid", b"private.test\t/\tsession", b"private.test\t/\ttracker"]
    # No file the workers wrote (the repository, WARC files included, and their logs) shows a
    # password, the Basic token or a cookie's value.
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode())
    secrets = [PASSWORD.encode(), token, SESSION.encode(), TRACKER.encode(), FORM_PASSWORD.encode()]
    written = [p for p in (tmp_path / "repo").rglob("*") if p.is_file()]
    found, redacted = _secrets_written([*written, *tmp_path.glob("w?.log")], secrets)
    assert found == []
    assert redacted > 0  # the WARC records of the private pages' exchanges, their values redacted
