"""``scrapy verify CONF`` (SPEC 11) on repositories of real crawls, whole and damaged, and its WARC
checks on files written with warcio (whole, cut short, unreadable without warcio)."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from pathlib import Path

import pytest

from tarantula.commands.verify import Tally, check_warc, gzip_cut, verify
from tarantula.core.config import load_config
from tests.helpers.crawls import run_crawl, run_scrapy, write_conf

pytestmark = pytest.mark.e2e


def conf_with(folder: Path, seeds: list[str], outputs: dict[str, bool], **keys: object) -> Path:
    return write_conf(folder, seeds, **outputs, **keys)


def scrapy_verify(conf: Path) -> subprocess.CompletedProcess[str]:
    return run_scrapy("verify", str(conf))


def small_site(web) -> str:
    web.page("a.test", "/", '<title>Home</title><a href="/a.html">a</a> <a href="/b.txt">b</a>')
    web.page("a.test", "/a.html", '<title>A</title><a href="/">home</a> <a href="/c.html">c</a>')
    web.page("a.test", "/c.html", "<title>C</title>")
    web.page("a.test", "/b.txt", "plain text\n", **{"Content-Type": "text/plain"})
    return web.url("a.test", "/")


@pytest.fixture
def crawled(web, tmp_path) -> tuple[Path, Path, str]:
    """A browsable crawl of a small site: its configuration, repository and host folder."""
    conf = conf_with(tmp_path, [small_site(web)], {"browsable": True})
    result = run_crawl(conf)
    assert result.status == 0, result.log
    return conf, result.repository, f"a.test:{web.port}"


def test_a_whole_repository_has_no_problems(crawled):
    conf, _, _ = crawled
    check = scrapy_verify(conf)
    assert (check.returncode, check.stdout) == (0, "")
    assert "4 documents, 4 files, 4 browse files" in check.stderr
    assert "no problems" in check.stderr


def test_each_problem_is_one_line(crawled):
    conf, repository, host = crawled
    (repository / host / "c.html").unlink()  # deleted
    (repository / host / "a.html").write_text("<title>A, edited</title>")  # changed
    (repository / host / "extra.html").write_text("<title>Who put this here?</title>")  # extra
    page = repository / "browse" / host / "index.html"  # a link to nowhere
    page.write_text(page.read_text(encoding="utf-8") + '<a href="nowhere.html#x">x</a>')

    check = scrapy_verify(conf)

    assert check.returncode == 1
    changed, deleted, extra, broken = sorted(check.stdout.splitlines())
    assert changed.startswith(f"{host}/a.html: changed (content MD5 ")
    assert broken == f"browse/{host}/index.html: broken link nowhere.html#x"
    assert deleted == f"{host}/c.html: missing (stored for http://{host}/c.html)"
    assert extra == f"{host}/extra.html: not a stored document"
    assert "4 problems" in check.stderr


def test_the_index_and_browse_folder_must_match_the_state(crawled):
    conf, repository, host = crawled
    index = repository / "index.txt"
    lines = index.read_text(encoding="utf-8").splitlines(keepends=True)
    index.write_text("".join(line for line in lines if "/c.html\thttp" not in line) + "garbage\n")
    (repository / "browse" / host / "b.txt").unlink()
    (repository / "browse" / host / "old.html").write_text("stale")

    problems = sorted(verify(load_config(conf)))

    assert problems == [
        f"browse/{host}/b.txt: missing (stored for http://{host}/b.txt)",
        f"browse/{host}/index.html: broken link b.txt",  # the link to the missing copy
        f"browse/{host}/old.html: not a stored document",
        f"index.txt: no record of the stored document http://{host}/c.html",
        f"index.txt:{len(lines)}: not a record line nor a link line",
    ]


def test_a_browse_page_that_would_reach_the_network_is_a_problem(web, tmp_path):
    """A page whose style sheet, image or frame was not stored keeps its absolute URL in
    browse/: opened, it fetches them from the network (SPEC 11). Links one follows do not."""
    css = web.url("a.test", "/s.css")
    web.page("a.test", "/", f'<title>Home</title><link rel="stylesheet" href="{css}">'
             '<img src="/i.png" srcset="/j.png 2x"><a href="/a.html">a</a>'
             '<a href="http://elsewhere.test/">out</a>')  # fmt: skip
    web.page("a.test", "/a.html", '<title>A</title><a href="http://elsewhere.test/">out</a>')
    conf = conf_with(tmp_path, [web.url("a.test", "/")], {"browsable": True,
                                                           "page_requisites": False})  # fmt: skip
    assert run_crawl(conf).status == 0
    check = scrapy_verify(conf)
    assert check.returncode == 1
    assert check.stdout == (
        f"browse/a.test:{web.port}/index.html: reaches the network when opened: loads {css} "
        "and 2 more\n"
    )
    assert ": 1 problem (" in check.stderr


def test_a_requisite_the_server_refused_is_a_failed_requisite_not_a_problem(web, tmp_path):
    """SPEC 11: the crawl asked for the style sheet and the images and the server answered 404:
    the repository is whole, and verify names each with its status (exit 0)."""
    css = web.url("a.test", "/s.css")
    web.page("a.test", "/", f'<title>Home</title><link rel="stylesheet" href="{css}">'
             '<img src="/i.png" srcset="/j.png 2x"><a href="/a.html">a</a>')  # fmt: skip
    web.page("a.test", "/a.html", "<title>A</title>")
    conf = conf_with(tmp_path, [web.url("a.test", "/")], {"browsable": True})
    assert run_crawl(conf).status == 0
    check = scrapy_verify(conf)
    assert check.returncode == 0, check.stdout
    page = f"browse/a.test:{web.port}/index.html"
    assert sorted(check.stdout.splitlines()) == sorted(
        f"{page}: failed page requisite {url} (http-404)"
        for url in (css, web.url("a.test", "/i.png"), web.url("a.test", "/j.png"))
    )
    assert ": no problems; 3 failed page requisites, named above (" in check.stderr


def test_a_bad_configuration_exits_2(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("<crawler-options>\nstarting-points = ;\n")
    check = scrapy_verify(conf)
    assert check.returncode == 2
    assert "error" in check.stderr


def test_a_repository_never_crawled_is_one_problem(tmp_path):
    conf = write_conf(tmp_path, ["http://a.test/"])
    check = scrapy_verify(conf)
    assert check.returncode == 1
    assert (
        check.stdout
        == f"{tmp_path / 'repo'}: no crawl state ({tmp_path / 'repo/.tarantula/state.db'} is missing)\n"
    )


def test_a_crawl_with_warc_and_browsable_verifies(web, tmp_path):
    pytest.importorskip("warcio")
    conf = conf_with(tmp_path, [small_site(web)], {"browsable": True, "warc": True})
    result = run_crawl(conf)
    assert result.status == 0, result.log
    assert list((result.repository / "warc").glob("*.warc.gz")), "no WARC file written"
    check = scrapy_verify(conf)
    assert (check.returncode, check.stdout) == (0, "")
    assert "1 WARC file:" in check.stderr


# -- WARC files -----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def warc_folder(tmp_path: Path) -> None:
    (tmp_path / "warc").mkdir()


def warc_file(records: int = 3, *, compressed: bool = True) -> bytes:
    warcio = pytest.importorskip("warcio.warcwriter")
    from warcio.statusandheaders import StatusAndHeaders

    out = io.BytesIO()
    writer = warcio.WARCWriter(out, gzip=compressed)
    for i in range(records):
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
        payload = io.BytesIO(f"payload {i} ".encode() * 500)
        record = writer.create_warc_record(
            f"http://a.test/{i}", "response", payload=payload, http_headers=headers
        )
        writer.write_record(record)
    return out.getvalue()


def warc_problems(tmp_path: Path) -> list[str]:
    return list(check_warc(tmp_path / "warc", Tally()))


def test_whole_warc_files_have_no_problems(tmp_path):
    (tmp_path / "warc" / "a.warc.gz").write_bytes(warc_file())
    (tmp_path / "warc" / "b.warc").write_bytes(warc_file(compressed=False))
    assert warc_problems(tmp_path) == []
    assert gzip_cut(tmp_path / "warc" / "a.warc.gz") is None


@pytest.mark.parametrize("keep", [-1, -100, 10])
def test_a_gzip_member_cut_short_is_found(tmp_path, keep):
    (tmp_path / "warc" / "a.warc.gz").write_bytes(warc_file()[:keep])
    (problem,) = warc_problems(tmp_path)
    assert problem.startswith("warc/a.warc.gz: the gzip member at offset ")
    assert problem.endswith(" is cut short")


def test_an_empty_warc_file_is_a_problem(tmp_path):
    (tmp_path / "warc" / "a.warc.gz").write_bytes(b"")
    assert warc_problems(tmp_path) == ["warc/a.warc.gz: empty"]


def test_bytes_that_are_not_gzip_are_found(tmp_path):
    (tmp_path / "warc" / "a.warc.gz").write_bytes(warc_file() + b"\0\0\0junk")
    (problem,) = warc_problems(tmp_path)
    assert "is damaged" in problem
    (tmp_path / "warc" / "a.warc.gz").write_bytes(gzip.compress(b"not a WARC record\r\n\r\n"))
    (problem,) = warc_problems(tmp_path)
    assert problem.startswith("warc/a.warc.gz: unreadable: ")


def test_an_uncompressed_record_cut_short_is_found(tmp_path):
    (tmp_path / "warc" / "a.warc").write_bytes(warc_file(compressed=False)[:-500])
    (problem,) = warc_problems(tmp_path)
    assert problem.startswith("warc/a.warc: record at offset ")


def test_without_warcio_the_warc_files_are_a_problem(tmp_path, monkeypatch):
    (tmp_path / "warc" / "a.warc.gz").write_bytes(warc_file())
    monkeypatch.setitem(sys.modules, "warcio.archiveiterator", None)  # import fails
    assert warc_problems(tmp_path) == ["warc/: warcio not installed, the WARC files cannot be read"]
