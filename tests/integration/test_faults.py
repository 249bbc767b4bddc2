"""End-to-end: a fault in one document costs that document at most (SPEC 6).

Each case is a document shape met on real sites that once stopped the crawl with a traceback and
exit status 1, or lost the document, or left its URL leased in a run recorded as finished.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tarantula.demo.server import Resource
from tests.helpers.crawls import run_crawl, write_conf

pytestmark = pytest.mark.e2e

XLS = "application/vnd.ms-excel"
PDF_HEX_TITLE = (
    b"%PDF-1.4\n1 0 obj << /Title <FEFF 0041 0042> >> endobj\ntrailer << /Info 1 0 R >>\n%%EOF\n"
)


def leased(repository: Path) -> list[str]:
    """URLs the crawl state still holds as handed out (a finished run leaves none)."""
    with sqlite3.connect(repository / ".tarantula" / "state.db") as db:
        return [url for (url,) in db.execute("SELECT url FROM urls WHERE state = 1")]


def outcomes(repository: Path) -> dict[str, str]:
    with sqlite3.connect(repository / ".tarantula" / "state.db") as db:
        return dict(db.execute("SELECT url, outcome FROM urls"))


def test_real_web_documents_are_stored_and_the_crawl_exits_0(web, tmp_path):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    links = ["/download/budget", "/download/slides", "/papers/hex.pdf", "/papers/x-pdf", "/odd"]
    web.page("a.test", "/", "".join(f'<a href="{link}">{link}</a>' for link in links))
    pptx = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    web.add(
        "a.test",
        "/download/budget",
        Resource(b"\xd0\xcf\x11\xe0 xls", headers={"Content-Type": XLS}),
    )
    web.add(
        "a.test", "/download/slides", Resource(b"PK\x03\x04 pptx", headers={"Content-Type": pptx})
    )
    web.add(
        "a.test",
        "/papers/hex.pdf",
        Resource(PDF_HEX_TITLE, headers={"Content-Type": "application/pdf"}),
    )
    web.add(
        "a.test",
        "/papers/x-pdf",
        Resource(PDF_HEX_TITLE + b" ", headers={"Content-Type": "application/x-pdf"}),
    )
    web.add(
        "a.test",
        "/odd",
        Resource(b"odd", headers={"Content-Type": "application/vnd.odd.thing+xml"}),
    )
    result = run_crawl(write_conf(tmp_path, [u("/")]))
    assert result.status == 0, result.log[-3000:]
    assert "Traceback" not in result.log
    types = {r.url: (r.type, r.title) for r in result.records}
    assert types[u("/download/budget")] == ("xls", None)
    assert types[u("/download/slides")] == ("pptx", None)
    assert types[u("/papers/hex.pdf")] == ("pdf", "AB")
    assert types[u("/papers/x-pdf")] == ("pdf", "AB")
    assert u("/odd") in types
    host = f"a.test:{web.port}"
    assert {"download/budget.xls", "download/slides.pptx", "papers/x-pdf.pdf"} <= {
        f.removeprefix(host + "/") for f in result.files()
    }
    assert leased(result.repository) == []


def test_a_defect_marks_its_url_done_and_exits_1(web, tmp_path):
    """An exception in the crawler's own code is an error (exit 1), and its URL is done with the
    reason "error" rather than left leased in a run recorded as finished."""
    web.page("a.test", "/", '<a href="/x.html">x</a>')
    web.page("a.test", "/x.html", "x")
    pipelines = '{"tests.helpers.faulty.FaultyPipeline": 100}'
    conf = write_conf(tmp_path, [web.url("a.test", "/")])
    result = run_crawl(conf, "-s", f"ITEM_PIPELINES={pipelines}")
    assert result.status == 1
    assert leased(result.repository) == []
    assert set(outcomes(result.repository).values()) == {"error"}
    assert result.records == []
