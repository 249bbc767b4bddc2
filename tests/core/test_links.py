"""Which of a page's links are listed and which fetched (:mod:`tarantula.core.links`): a link that
would log the crawl out is listed, never fetched, and ``explain`` names the rule (SPEC 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tarantula.core.config import CrawlConfig
from tarantula.core.links import explain, logs_out, plan_links, resolve_links
from tarantula.core.rules import UrlRules

RULES = UrlRules(CrawlConfig(path=Path("c.conf"), starting_points=("http://a.org/",)))


def plan(hrefs: list[tuple[str, str]]) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    found = resolve_links("http://a.org/", None, hrefs, RULES)
    planned = plan_links(found.links, RULES, robots=lambda url: True, seen=lambda url: False,
                         depth=1)  # fmt: skip
    return [url for url, _ in planned.listed], [link.url for link in planned.fetch], planned.drops


def test_a_link_that_logs_out_is_listed_and_not_fetched():
    listed, fetched, drops = plan([("/logout", "Bye"), ("/bye.php", "Sign Out"),
                                   ("/x.html", "X"), ("/catalog/outdoor.html", "Outdoor")])  # fmt: skip
    assert listed == ["http://a.org/logout", "http://a.org/bye.php", "http://a.org/x.html",
                      "http://a.org/catalog/outdoor.html"]  # fmt: skip
    assert fetched == ["http://a.org/x.html", "http://a.org/catalog/outdoor.html"]
    assert drops == [("logout", "http://a.org/logout"), ("logout", "http://a.org/bye.php")]


@pytest.mark.parametrize(
    "words",
    ["logout", "LogOut", "log-out", "log_out", "log.out", "log out", "signout", "Sign-Off",
     "logoff", "LOG_OFF", "end_session", "EndSession", "end-session"],
)  # fmt: skip
def test_every_case_and_separator_logs_out(words):
    assert logs_out(f"http://a.org/{words.replace(' ', '%20')}.php")
    assert logs_out("http://a.org/account", words)


@pytest.mark.parametrize(
    "path", ["/catalog/outdoor", "/blog-offers", "/login", "/signup", "/logs/out.html", "/epilog"]
)
def test_words_that_only_contain_the_letters_do_not(path):
    assert not logs_out(f"http://a.org{path}", "Catalog")


def test_explain_names_the_rule():
    e = explain(RULES, "http://a.org/user/logout")
    assert (e.fetched, e.stored) == ("no", "no")
    assert e.listed.startswith("yes")
    assert e.reasons[0].startswith("rule logout: ")
