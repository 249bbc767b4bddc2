"""End-to-end: the optional extras stay optional (SPEC 1). Scrapy is run with the extras' packages
hidden, as a plain ``pip install`` leaves them (CI also installs the project without extras in a
fresh virtual environment and crawls the demo site with it): every command starts, a crawl that
needs no extra runs, and a configuration that asks for a feature of a missing extra is refused
with one ``FILE:LINE:COL: error:`` line naming the extra, exit status 2, nothing fetched."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.helpers.crawls import PROJECT, write_conf

pytestmark = pytest.mark.e2e

#: The top-level packages of the extras (pyproject.toml): redis, warc, playwright, scrapyd.
OPTIONAL = ("redis", "hiredis", "warcio", "playwright", "scrapy_playwright", "scrapyd")

#: Runs Scrapy's command line with OPTIONAL made unimportable.
BARE_SCRAPY = f"""
import sys
class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, Hidden())
from scrapy.cmdline import execute
execute(["scrapy", *sys.argv[1:]])
"""


def bare_scrapy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BARE_SCRAPY, *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def test_every_command_starts_without_the_extras():
    listed = bare_scrapy("list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["tarantula"]
    commands = bare_scrapy("-h")
    assert commands.returncode == 0, commands.stderr
    for name in ("explain", "merge", "verify", "watch", "scrapyd"):
        assert re.search(rf"^  {name} ", commands.stdout, re.M), commands.stdout


def test_a_crawl_runs_without_the_extras(web, tmp_path):
    web.page("a.test", "/", '<title>Home</title><a href="/a.html">a</a>')
    web.page("a.test", "/a.html", "<title>A</title>")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], log_level=1)
    crawled = bare_scrapy("crawl", "tarantula", "-a", f"conf={conf}")
    assert crawled.returncode == 0, crawled.stderr
    assert "documents stored     2" in crawled.stdout


def test_a_feature_of_a_missing_extra_is_refused_before_anything_is_fetched(web, tmp_path):
    seed = web.url("a.test", "/")
    conf = write_conf(
        tmp_path, [seed], warc=True, redis="redis://127.0.0.1:1/0", render_list=[".*"]
    )
    refused = bare_scrapy("crawl", "tarantula", "-a", f"conf={conf}")
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 3, refused.stderr
    for extra in ("playwright", "warc", "redis"):
        (line,) = [line for line in lines if f"pip install 'tarantula[{extra}]'" in line]
        assert re.match(rf"{re.escape(str(conf))}:\d+:\d+: error: ", line), line
    assert "Traceback" not in refused.stderr
    assert web.requests == []
    scrapyd = bare_scrapy("scrapyd")
    assert scrapyd.returncode == 2
    assert "pip install 'tarantula[scrapyd]'" in scrapyd.stderr
