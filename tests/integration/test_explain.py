"""`scrapy explain`: the verdict and the deciding rule for each URL, offline or with robots.txt."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tarantula.contracts import DEMO_SITE
from tarantula.demo.server import Resource, SiteServer
from tests.helpers.crawls import PROJECT, write_conf

pytestmark = pytest.mark.e2e


def explain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "explain", *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def blocks(output: str) -> dict[str, str]:
    """URL -> its block of lines."""
    result: dict[str, str] = {}
    current = ""
    for line in output.splitlines():
        if not line.startswith(" "):
            current = line
            result[current] = ""
        else:
            result[current] += line.strip() + "\n"
    return result


def test_explain_names_the_rule_and_applies_robots(tmp_path):
    with SiteServer(root=DEMO_SITE) as server:
        u = lambda p, h="www.demo.test": server.url(h, p)  # noqa: E731
        conf = write_conf(
            tmp_path,
            [u("/")],
            scope="domain-scope",
            accept_list=[r"\.html?$", r"\.pdf$"],
            reject_list=[r"\.tmp\."],
            render_list=["/news/"],
            browser="sh",  # explain starts no browser; any executable passes the config check
        )
        urls = [
            u("/private/secret.html"),
            u("/news/cafe.html"),
            u("/", "elsewhere.test"),
            u("/a/b/a/b/a/b/"),
            "javascript:void(0)",
            u("/docs/draft.tmp.txt"),
            u("/img/logo.png"),
            u("/about"),
        ]
        result = explain(str(conf), "--robots", *urls)
        requests = server.targets()
    assert result.returncode == 0, result.stderr
    out = blocks(result.stdout)
    assert "fetched     no" in out[urls[0]] and "robots.txt disallows it" in out[urls[0]]
    assert "fetched     yes" in out[urls[1]] and "stored      yes" in out[urls[1]]
    assert "render-list pattern matches" in out[urls[1]]
    assert "render-list" not in out[urls[7]]
    assert "rule scope" in out[urls[2]]
    assert "rule pathological-path" in out[urls[3]] and "fetched     no" in out[urls[3]]
    assert "listed      yes" in out[urls[3]]  # a guard stops the fetch, not the listing
    assert "rule scheme" in out[urls[4]]
    assert "rule reject" in out[urls[5]]
    assert "rule not-accepted" in out[urls[6]] and "listed      yes" in out[urls[6]]
    assert "decided after the download" in out[urls[7]] and "about.html yes" in out[urls[7]]
    assert requests == ["/robots.txt"]  # one robots.txt per host asked about, nothing else


def test_explain_offline_and_bad_config(tmp_path):
    conf = write_conf(tmp_path, ["http://a.test/"])
    result = explain(str(conf), "http://a.test/x.html")
    assert result.returncode == 0
    assert "robots.txt not checked" in result.stdout
    bad = tmp_path / "bad.conf"
    bad.write_text("scope = nowhere;\n", encoding="utf-8")
    result = explain(str(bad), "http://a.test/")
    assert result.returncode == 2 and "bad.conf:1:9: error:" in result.stderr


def test_explain_follows_robots_txt_redirects_as_the_crawl_does(tmp_path):
    """RFC 9309: a robots.txt that redirects is read where it leads (here another host), with the
    configuration's user agent; explain agrees with the crawl."""
    with SiteServer() as server:
        server.add(
            "a.test",
            "/robots.txt",
            Resource(b"", 301, {"Location": server.url("b.test", "/rules.txt")}),
        )
        rules = b"User-agent: tarantula\nDisallow: /private/\n"
        server.add("b.test", "/rules.txt", Resource(rules, headers={"Content-Type": "text/plain"}))
        conf = write_conf(tmp_path, [server.url("a.test", "/")], user_agent="TestBot/2.0")
        result = explain(
            str(conf),
            "--robots",
            server.url("a.test", "/private/x.html"),
            server.url("a.test", "/ok.html"),
        )
        asked = [(r.host, r.target, r.headers.get("User-Agent")) for r in server.requests]
    assert result.returncode == 0, result.stderr
    out = blocks(result.stdout)
    assert "robots.txt disallows it" in out[server.url("a.test", "/private/x.html")]
    assert "fetched     yes" in out[server.url("a.test", "/ok.html")]
    assert asked == [
        ("a.test", "/robots.txt", "TestBot/2.0"),
        ("b.test", "/rules.txt", "TestBot/2.0"),
    ]
