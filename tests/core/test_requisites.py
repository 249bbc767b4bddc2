"""Page requisites (SPEC 6): what a page loads by itself, and the rules a requisite is held to."""

from __future__ import annotations

from pathlib import Path

import pytest

from tarantula.core.config import CrawlConfig
from tarantula.core.requisites import entry_url, requisite_url, requisites
from tarantula.core.rules import UrlRules

PAGE = "http://a.test/dir/page.html"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<img src="i.png">', ["i.png"]),
        ('<img srcset="s1.png 1x, s2.png 2x">', ["s1.png", "s2.png"]),
        ('<picture><source srcset="p.webp 1x"><img src="p.png"></picture>', ["p.webp", "p.png"]),
        ('<link rel="stylesheet" href="s.css">', ["s.css"]),
        (
            '<link rel="icon" href="f.ico"><link rel="apple-touch-icon" href="t.png">',
            ["f.ico", "t.png"],
        ),
        (
            '<link rel="preload" href="f.woff2"><link rel="modulepreload" href="m.js">',
            ["f.woff2", "m.js"],
        ),
        ('<link rel="next" href="2.html"><link rel="alternate" href="feed.xml">', []),
        ('<script src="app.js"></script>', ["app.js"]),
        (
            '<video src="v.mp4" poster="v.jpg"><track src="t.vtt"></video>',
            ["v.mp4", "v.jpg", "t.vtt"],
        ),
        ('<audio src="a.ogg"><source src="a.mp3"></audio>', ["a.ogg", "a.mp3"]),
        ('<object data="o.svg"></object><embed src="e.swf">', ["o.svg", "e.swf"]),
        ('<input type="image" src="go.png"><input type="text" src="no.png">', ["go.png"]),
        ('<svg><image href="h.png"/><image xlink:href="x.png"/></svg>', ["h.png", "x.png"]),
        ('<p style="background: url(b.png)">', ["b.png"]),
        ("<style>@import 'i.css'; p { background: url(\"q.png\") }</style>", ["i.css", "q.png"]),
        ('<iframe src="f.html"></iframe>', ["f.html"]),
        # links one follows, and what a browser does not load, are not requisites
        ('<a href="x.png">x</a><area href="m.png"><form action="f.png">', []),
        ("<!-- <img src='c.png'> --><script>var s = '<img src=\"j.png\">'</script>", []),
        ('<img src="data:image/png;base64,AA"><img src="mailto:x"><img src="">', []),
    ],
)
def test_what_a_page_loads(html: str, expected: list[str]) -> None:
    assert requisites(html, PAGE) == [f"http://a.test/dir/{name}" for name in expected]


def test_resolved_against_the_base_distinct_and_without_fragments() -> None:
    html = '<base href="http://b.test/s/"><img src="i.png#a"><img src="i.png#b"><img src="//c.test/j.png">'
    assert requisites(html, PAGE) == ["http://b.test/s/i.png", "http://c.test/j.png"]


def test_a_style_sheet_loads_its_imports_and_urls_but_not_its_comments() -> None:
    css = "/* url(no.png) */ @import url(a.css) screen; @import 'b.css'; p { background: URL( c.png ) }"
    found = requisites(css, "http://a.test/s/main.css", "css")
    assert found == ["http://a.test/s/a.css", "http://a.test/s/b.css", "http://a.test/s/c.png"]


def test_a_requisite_entry_is_never_a_document_url() -> None:
    entry = entry_url("http://a.test/s.css")
    assert requisite_url(entry) == "http://a.test/s.css"
    assert requisite_url("http://a.test/s.css") is None
    assert "#" in entry  # a normalized URL has no fragment


def test_a_requisite_is_held_to_length_and_the_reject_list_not_to_scope_accept_or_guards() -> None:
    config = CrawlConfig(path=Path("c"), starting_points=("http://a.test/",), scope="host-scope",
                         accept_list=(r".*\.html$",), reject_list=(r".*\.gif$",),
                         max_url_length=60)  # fmt: skip
    rules = UrlRules(config)
    assert rules.check_requisite("http://cdn.b.test/x.png").passed  # another host, not accepted
    assert rules.check_requisite("http://a.test/a/b/a/b/a/b/a/b/x.png").passed  # a guard's path
    assert rules.check_requisite("http://a.test/x.gif").rule == "reject"
    assert rules.check_requisite("http://a.test/" + "x" * 80 + ".png").rule == "url-length"
    assert rules.check_requisite("http://a.test/X.png").url == "http://a.test/X.png"
