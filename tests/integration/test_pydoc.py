"""End-to-end on a real site: Debian's Python 3.11 documentation (``python3.11-doc``), served from
127.0.0.1, whose index pages hold more than 12,000 links each. Every distinct link of a page is in
its record (SPEC 6, 7.2: no link is dropped by default).

Skipped when the package is missing; with ``TARANTULA_REQUIRE_PYDOC`` set (as CI sets it) it
fails instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import lxml.html
import pytest

from tarantula.core.urls import UrlRejected, join_url, normalize_url
from tarantula.demo.server import SiteServer
from tests.helpers.crawls import run_crawl, run_scrapy, write_conf

pytestmark = pytest.mark.e2e

PYDOC = Path("/usr/share/doc/python3.11/html")
HOST = "docs.python.test"


@pytest.fixture(scope="module")
def pydoc() -> Iterator[SiteServer]:
    if not (PYDOC / "genindex-all.html").is_file():
        reason = f"{PYDOC} is missing (apt-get install python3.11-doc)"
        if os.environ.get("TARANTULA_REQUIRE_PYDOC"):
            pytest.fail(f"{reason}, and TARANTULA_REQUIRE_PYDOC is set")
        pytest.skip(reason)
    with tempfile.TemporaryDirectory() as root:
        # A copy with its symbolic links followed: _static/jquery.js and underscore.js point into
        # /usr/share/javascript, outside the site, which the server would not serve.
        shutil.copytree(PYDOC, Path(root) / HOST)
        with SiteServer(root=Path(root)) as server:
            yield server


def page_links(page: Path, url: str) -> set[tuple[str, str]]:
    """The distinct (normalized target, anchor text) pairs of a page's ``<a href>`` on its own
    host, computed here from the file with lxml, apart from the crawler's own link extraction
    (anchors are plain text on these pages)."""
    tree = lxml.html.parse(str(page)).getroot()
    host = url.split("/")[2]
    found = set()
    for anchor in tree.iter("a"):
        href = anchor.get("href")
        if href is None:
            continue
        try:
            link = normalize_url(join_url(url, href))
        except UrlRejected:
            continue
        if link.split("/")[2] == host:
            found.add((link, " ".join(anchor.text_content().split())))
    return found


@pytest.mark.parametrize("name", ["genindex-all.html", "contents.html"])
def test_every_distinct_link_of_a_huge_index_page_is_in_its_record(pydoc, tmp_path, name):
    url = pydoc.url(HOST, f"/{name}")
    result = run_crawl(write_conf(tmp_path, [url], max_page_number=1, log_level=1))
    assert result.status == 0, result.process.stdout
    listed = set(result.record(url).links)
    expected = page_links(PYDOC / name, url)
    assert len(expected) > 5_000  # past the cap the crawler once had by default
    assert len(result.record(url).links) == len(listed)  # each pair once
    assert listed == expected


def test_the_browsable_copy_loads_nothing_from_the_network(pydoc, tmp_path):
    """SPEC 6, 11: every page of ``browse/`` finds what it loads (its style sheets, what they
    import, scripts, images) in ``browse/``; one whose style sheet's name ends in a query
    (``pydoctheme.css?2022.1``) links the copy named so that a browser applies it. The library's
    pages, one link from its index (the whole site: ``python -m bench.pydoc``)."""
    seeds = [pydoc.url(HOST, "/library/index.html"), pydoc.url(HOST, "/library/os.html")]
    conf = write_conf(tmp_path, seeds, browsable=True, threads=8, host_concurrency=8, max_depth=1,
                      scope="host-scope", log_level=1)  # fmt: skip
    result = run_crawl(conf, timeout=600)
    assert result.status == 0, result.process.stdout
    assert len(result.records) > 100
    assert result.stats["tarantula/requisites/stored"] > 15
    assert not any("_static" in url for url in result.urls)  # requisites are not documents
    checked = run_scrapy("verify", str(conf), timeout=600)
    assert (checked.returncode, checked.stdout) == (0, ""), checked.stdout[:2000]
    page = result.repository / f"browse/{HOST}:{pydoc.port}/library/os.html"
    text = page.read_text(encoding="utf-8")
    assert 'href="../_static/pydoctheme.css%3F2022.1.css"' in text
    assert (page.parent.parent / "_static/pydoctheme.css?2022.1.css").is_file()
