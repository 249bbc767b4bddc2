"""End-to-end: page requisites (SPEC 6) in a crawl shared through a real Redis: every requisite is
fetched once whichever worker meets it, kept in the folder of the worker that fetched it, linked
from ``browse/``, carried by ``scrapy merge``; every folder passes ``scrapy verify``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.crawls import run_scrapy
from tests.helpers.shared import figure, finish, shared_conf, start_worker, wait_for_workers
from tests.helpers.styled import REQUISITES, asked, home_html, styled_site

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def test_two_workers_fetch_each_requisite_once_into_the_shared_folder(web, tmp_path, redis_server):
    home = styled_site(web)
    conf = shared_conf(tmp_path, home, redis_server, browsable=True)
    wait_for_workers(web, conf, redis_server, "/", home_html(web.port).encode(), host="www.x.test")
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    fetched = asked(web)
    assert set(fetched) == REQUISITES | {("www.x.test", "/"), ("www.x.test", "/other.html")}
    assert len(fetched) == len(set(fetched)), fetched
    repository = tmp_path / "repo"
    assert "png" not in (repository / "index.txt").read_text(encoding="utf-8")
    page = (repository / f"browse/www.x.test:{web.port}/index.html").read_text(encoding="utf-8")
    assert f'src="../cdn.y.test:{web.port}/logo.png"' in page
    assert 'href="s/main.css"' in page
    check = run_scrapy("verify", str(conf))
    assert (check.returncode, check.stdout) == (0, ""), check.stdout
    assert f"{len(REQUISITES)} page requisites" in check.stderr
    report = (repository / "report.html").read_text(encoding="utf-8")
    assert figure(report, "requisites") == str(len(REQUISITES))
    assert figure(report, "documents") == "2"


def test_requisites_in_folders_of_their_own_merge_with_the_pages(web, tmp_path, redis_server):
    home = styled_site(web)
    confs = [
        shared_conf(tmp_path / name, home, redis_server, browsable=True)
        for name in ("m1", "m2", "merged")
    ]
    # The page waits for both workers: one run, each with a part, however slowly one starts.
    wait_for_workers(web, confs[0], redis_server, "/", home_html(web.port).encode(),
                     host="www.x.test")  # fmt: skip
    finish(start_worker(confs[0], "w1"), start_worker(confs[1], "w2"))
    # Each part passes: what another folder holds stays a URL, which scrapy merge brings in.
    merged = verify_parts_and_merge(confs)
    assert f"2 documents, {len(REQUISITES)} page requisites" in merged
    target = tmp_path / "merged" / "repo"
    page = (target / f"browse/www.x.test:{web.port}/index.html").read_text(encoding="utf-8")
    assert f'src="../cdn.y.test:{web.port}/logo.png"' in page


def test_a_recrawl_by_another_folders_worker_leaves_both_folders_whole(web, tmp_path, redis_server):
    """A recrawl's worker in another folder fetches the requisites again into its own: the first
    folder's copies stay, and neither folder's verify finds a problem; the merge takes the new."""
    home = styled_site(web)
    confs = [
        shared_conf(tmp_path / name, home, redis_server, browsable=True, period=0)
        for name in ("m1", "m2", "merged")
    ]
    finish(start_worker(confs[0], "w1"))
    finish(start_worker(confs[1], "w2"))  # the crawl is complete: w2 recrawls it, alone
    assert "Run 2: recrawl" in (tmp_path / "m2" / "w2.log").read_text(encoding="utf-8")
    assert f"2 documents, {len(REQUISITES)} page requisites" in verify_parts_and_merge(confs)


def verify_parts_and_merge(confs: list[Path]) -> str:
    """Check the worker folders of ``confs[:2]`` (each must pass ``scrapy verify``), merge them
    into ``confs[2]``'s, check that; the merged repository's verify summary."""
    for conf in confs[:2]:
        check = run_scrapy("verify", str(conf))
        assert (check.returncode, check.stdout) == (0, ""), check.stdout
    parts = [conf.parent / "repo" for conf in confs[:2]]
    result = run_scrapy("merge", str(confs[2]), *map(str, parts))
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    check = run_scrapy("verify", str(confs[2]))
    assert (check.returncode, check.stdout) == (0, ""), check.stdout
    return check.stderr
