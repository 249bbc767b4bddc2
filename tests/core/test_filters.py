"""Accept/reject lists and fetch-worthiness (SPEC 5)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tarantula.core.config import CrawlConfig
from tarantula.core.filters import UrlFilters, extension, may_be_html
from tarantula.core.rules import UrlRules

ACCEPT = [re.compile(p) for p in [r".*\.[hH][tT][mM][lL]?$", r".*\.[pP][dD][fF]$"]]
REJECT = [re.compile(p) for p in [r".*\.[tT][mM][pP]\.?.{0,4}$", r"^#.*", r".*\?.*"]]


@pytest.mark.parametrize(
    ("href", "url", "name", "rejected"),
    [
        ("#top", "http://h/", "index.html", True),  # matched on the link as written
        ("a.html?x=1", "http://h/a.html?x=1", "a.html", True),  # on the normalized URL
        ("draft.tmp.txt", "http://h/draft.tmp.txt", "draft.tmp.txt", True),  # on the file name
        ("a.html", "http://h/a.html", "a.html", False),
    ],
)
def test_reject(href, url, name, rejected):
    assert UrlFilters(ACCEPT, REJECT).rejects(href, url, name) is rejected


def test_accept_on_url_or_file_name_and_empty_list_accepts_all():
    f = UrlFilters(ACCEPT, ())
    assert f.accepts("http://h/a.HTM", "a.HTM")
    assert f.accepts("http://h/", "index.html")
    assert not f.accepts("http://h/a.zip", "a.zip")
    assert UrlFilters().accepts("http://h/a.zip", "a.zip")


def test_worth_fetching_reaches_through_unaccepted_pages():
    f = UrlFilters([re.compile(r"\.pdf$")], ())
    assert f.worth_fetching("http://h/list.php", "list.php")  # may be HTML: fetched, not stored
    assert f.worth_fetching("http://h/about", "about")  # no extension: decided after download
    assert f.worth_fetching("http://h/r.pdf", "r.pdf")
    assert not f.worth_fetching("http://h/a.zip", "a.zip")


def test_extension_rules():
    assert [extension(n) for n in ("x.tar.GZ", "noext", ".hidden", "dot.")] == ["gz", "", "", ""]
    assert all(may_be_html(n) for n in ("a.shtml", "a.aspx", "a.cgi", "a.pl", "b"))


def test_a_link_written_another_way_is_judged_again_when_reject_patterns_read_it():
    # UrlRules remembers verdicts; with reject patterns the link as written is part of the key.
    config = CrawlConfig(
        path=Path("c"), starting_points=("http://a.org/",), reject_list=(re.compile(r"^\.\./"),)
    )
    rules = UrlRules(config)
    assert rules.check("http://a.org/x.html", "/x.html").passed
    assert rules.check("http://a.org/x.html", "../x.html").rule == "reject"
    assert rules.check("http://a.org/x.html", "/x.html").passed
    plain = UrlRules(CrawlConfig(path=Path("c"), starting_points=("http://a.org/",)))
    assert plain.check("http://a.org/x.html", "/x.html").passed
    assert plain.check("http://a.org/x.html", "../x.html").passed
