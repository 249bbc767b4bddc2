"""The logged-in crawl's middlewares (SPEC 13) as components: cookies kept in the crawl's state
for a resume, credentials answered per origin and folder and dropped elsewhere."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from scrapy import Request
from scrapy.http import HtmlResponse, Response

from tarantula.downloadermiddlewares.auth import AuthMiddleware
from tarantula.downloadermiddlewares.cookies import CookieFileMiddleware
from tarantula.downloadermiddlewares.warc import exchange_of
from tarantula.login import Login
from tests.helpers.components import crawl_config


def test_cookies_servers_set_are_kept_for_a_resume_and_no_one_else_gets_them(crawls, tmp_path):
    cookie_file = tmp_path / "cookies.txt"
    cookie_file.write_text("# HTTP cookie file.\nprivate.test\tFALSE\t/\tFALSE\t0\tsession\tS1\n")
    config = crawl_config(tmp_path, cookies=cookie_file)
    crawl = crawls(config)
    first = CookieFileMiddleware.from_crawler(crawl.crawler)
    request = Request("http://private.test/a")
    first.process_request(request)
    assert request.headers[b"Cookie"] == b"session=S1"  # wget's cookie file, read
    answer = Response("http://private.test/a", headers={"Set-Cookie": "tracker=T2; Path=/"})
    first.process_response(request, answer)
    crawl.context.store.commit()
    state = (config.repository / ".tarantula" / "state.db").read_bytes()
    assert b"T2" not in state and b"S1" not in state  # kept, not in plain text
    cookie_file.write_text("# Netscape HTTP Cookie File\n")  # a resume needs the file no more
    again = CookieFileMiddleware.from_crawler(crawls(config).crawler)
    request = Request("http://private.test/b")
    again.process_request(request)
    assert sorted(request.headers[b"Cookie"].split(b"; ")) == [b"session=S1", b"tracker=T2"]
    elsewhere = Request("http://other.test/")
    again.process_request(elsewhere)
    assert b"Cookie" not in elsewhere.headers


def test_credentials_are_answered_per_origin_and_folder_and_dropped_elsewhere(crawls, tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine private.test login ada password pw\n")
    os.chmod(netrc, 0o600)
    config = crawl_config(tmp_path, netrc=netrc, starting_points=("https://private.test/",))
    auth = AuthMiddleware.from_crawler(crawls(config).crawler)
    challenge = {"WWW-Authenticate": 'Basic realm="r"'}
    asked = Request("https://private.test/area/a")
    retry = auth.process_response(asked, HtmlResponse(asked.url, status=401, headers=challenge))
    assert isinstance(retry, Request) and retry.dont_filter
    auth.process_request(retry)
    assert retry.headers[b"Authorization"] == b"Basic YWRhOnB3"
    below = Request("https://private.test/area/deeper/b")
    auth.process_request(below)
    assert below.headers[b"Authorization"] == b"Basic YWRhOnB3"
    for url in ("https://private.test/other/c", "http://private.test/area/a",
                "https://another.test/area/a"):  # fmt: skip
        carried = Request(url, headers={"Authorization": "Basic YWRhOnB3"})  # a redirect's copy
        auth.process_request(carried)
        assert b"Authorization" not in carried.headers, url
    # Plain HTTP to a host the seeds name over HTTPS: no credentials, even when asked.
    plain = Request("http://private.test/area/a")
    answer = HtmlResponse(plain.url, status=401, headers=challenge)
    assert auth.process_response(plain, answer) is answer
    # Asked again with them and refused: a failure, not a loop.
    refused = HtmlResponse(retry.url, status=401, headers=challenge)
    assert auth.process_response(retry, refused) is refused


def test_a_login_form_s_fields_are_archived_redacted_and_a_get_form_is_refused(
    crawls, tmp_path, monkeypatch
):
    monkeypatch.setenv("SITE_PASSWORD", "pw-2291")
    config = crawl_config(tmp_path, login_url="http://private.test/login",
                          login_fields=(("user", "ada"), ("password", "$SITE_PASSWORD")))  # fmt: skip
    crawl = crawls(config)
    login = Login(crawl.context, crawl.crawler)
    form = (b'<form method="%s" action="/in"><input name="csrf" value="c9">'
            b'<input type="password" name="password"></form>')  # fmt: skip
    (sent,) = login.form(HtmlResponse(login.url, body=form % b"post"))
    assert b"password=pw-2291" in sent.body  # the server gets the password, no archive does:
    exchange = exchange_of(sent, HtmlResponse(sent.url, body=b"Hello ada"), datetime.now(UTC))
    assert exchange.request_body == b"csrf=[redacted]&user=[redacted]&password=[redacted]"
    crawl.crawler.engine = crawl.crawler._create_engine()  # the failure closes the crawl
    get_form = HtmlResponse(login.url, body=form % b"get")
    assert list(login.form(get_form)) == []  # its fields would be in the URL: refused
    assert "sends its fields in the URL" in crawl.stat("tarantula/login/failed")
