"""The logged-in crawl's middlewares (SPEC 13) as components: cookies kept in the crawl's state
for a resume, credentials answered per origin and folder and dropped elsewhere."""

from __future__ import annotations

import os

from scrapy import Request
from scrapy.http import HtmlResponse, Response

from tarantula.downloadermiddlewares.auth import AuthMiddleware
from tarantula.downloadermiddlewares.cookies import CookieFileMiddleware
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
