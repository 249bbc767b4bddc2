"""End-to-end: the crawl command's contract — config errors, logging, faults, exit status, scrapy check."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tarantula.demo.server import Resource
from tests.helpers.crawls import PROJECT, run_crawl, write_conf
from tests.helpers.crawls import run_scrapy as scrapy

pytestmark = pytest.mark.e2e


BAD_CONFIGS = [
    (
        'starting-points = { "http://a.test/" }\nscope = host-scope;\n',
        "crawl.conf:1:",
        "expected ';'",
    ),
    (
        'starting-points = { "http://a.test/" };\nthreds = 2;\n',
        "crawl.conf:2:1:",
        "did you mean 'threads'",
    ),
    (
        'starting-points = { "http://a.test/" };\n<fancy-options>\n',
        "crawl.conf:2:",
        "unknown section",
    ),
    (
        'starting-points = { "http://a.test/" };\nscope = a;\nscope = b;\n',
        "crawl.conf:3:",
        "duplicate",
    ),
    (
        'starting-points = { "http://a.test/" };\n<multithreading-options>\nthreads = lots;\n',
        "crawl.conf:3:",
        "threads",
    ),
    (
        'starting-points = { "http://a.test/" };\nscope = galaxy-scope;\n',
        "crawl.conf:2:",
        "galaxy-scope",
    ),
    (
        'starting-points = { "http://a.test/" };\ntraversal-algorithm = random;\n',
        "crawl.conf:2:",
        "random",
    ),
    (
        'starting-points = { "http://a.test/" };\naccept-list = { "([a-z" };\n',
        "crawl.conf:2:",
        "regular expression",
    ),
    ('starting-points = { "ftp://a.test/" };\n', "crawl.conf:1:", "ftp://a.test/"),
    ("starting-points = { };\n", "crawl.conf:1:", "starting-points"),
    ('starting-points = { "http://a.test/",\n', "crawl.conf:1:", "unclosed"),
]


@pytest.mark.parametrize(("text", "where", "what"), BAD_CONFIGS)
def test_bad_configuration_exits_2_with_file_line_col(web, tmp_path, text, where, what):
    conf = tmp_path / "crawl.conf"
    conf.write_text(text.replace("http://a.test/", web.url("a.test", "/")), encoding="utf-8")
    result = scrapy("crawl", "tarantula", "-a", f"conf={conf}")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert lines, result.stderr
    assert any(where in line and what.lower() in line.lower() for line in lines), result.stderr
    assert "Traceback" not in result.stderr and "ERROR" not in result.stderr
    assert web.requests == []  # nothing was fetched


def test_unknown_arguments_are_refused_naming_the_known_ones(web, tmp_path):
    web.page("a.test", "/", "home")
    conf = write_conf(tmp_path, [web.url("a.test", "/")])
    result = run_crawl(conf, "-a", "period=0", "-a", "recrawl=soon")
    assert result.status == 2
    assert result.process.stderr.splitlines() == [
        "error: unknown argument -a period (known: -a conf, -a worker, -a recrawl)",
        "error: -a recrawl must be yes or no, got 'soon'",
    ]
    assert web.requests == []  # nothing fetched


def test_missing_config_file_and_several_problems(tmp_path):
    result = scrapy("crawl", "tarantula", "-a", f"conf={tmp_path / 'nope.conf'}")
    assert (
        result.returncode == 2
        and "nope.conf:1:1: error:" in result.stderr
        and "Traceback" not in result.stderr
    )
    conf = tmp_path / "many.conf"
    conf.write_text("threds = 2;\nscope = nowhere;\n", encoding="utf-8")
    result = scrapy("crawl", "tarantula", "-a", f"conf={conf}")
    assert result.returncode == 2
    assert (
        len([line for line in result.stderr.splitlines() if ": error: " in line]) >= 3
    )  # + no seeds


def test_log_file_relative_to_config_and_log_levels(web, tmp_path):
    web.page("a.test", "/", '<a href="/x.html">x</a>')
    web.page("a.test", "/x.html", "x")
    folder = tmp_path / "cfg"
    folder.mkdir()
    levels = {}
    for level in (0, 1, 2):
        conf = write_conf(
            folder,
            [web.url("a.test", "/")],
            log_file=f"logs/crawl{level}.log",
            log_level=level,
            repository=f"../out{level}",
        )
        (folder / "logs").mkdir(exist_ok=True)
        result = run_crawl(conf)
        assert result.status == 0
        assert (tmp_path / f"out{level}" / "index.txt").exists()
        levels[level] = (folder / "logs" / f"crawl{level}.log").read_text(encoding="utf-8")
    assert " INFO: " not in levels[0] and " DEBUG: " not in levels[0]
    assert " INFO: " in levels[1] and " DEBUG: " not in levels[1]
    assert " DEBUG: " in levels[2]


def test_log_file_screen_logs_to_the_terminal(web, tmp_path):
    web.page("a.test", "/", "home")
    result = run_crawl(
        write_conf(tmp_path, [web.url("a.test", "/")], log_file="screen", log_level=1)
    )
    assert result.status == 0
    assert "Stored " in result.process.stderr
    assert not (tmp_path / "log").exists()


def test_network_faults_are_counted_not_fatal(web, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    web.add("a.test", "/robots.txt", Resource(b"", status=404))
    web.page(
        "a.test",
        "/",
        f'<a href="/missing.html">404</a><a href="/boom.html">500</a>'
        f'<a href="http://a.test:{dead}/x.html">refused</a><a href="http://nowhere.invalid/">dns</a>'
        f'<a href="/ok.html">ok</a>',
    )
    web.add("a.test", "/boom.html", Resource(b"boom", status=500))
    web.page("a.test", "/ok.html", "ok")
    result = run_crawl(write_conf(tmp_path, [web.url("a.test", "/")], scope="free-spanning"))
    assert result.status == 0, result.process.stdout
    assert web.url("a.test", "/ok.html") in result.urls
    out = result.process.stdout
    assert "http-404: 1" in out and "http-500: 1" in out
    assert "errors               0" in out


def test_unmapped_name_fails_at_once_without_dns(web, tmp_path):
    web.page("a.test", "/", '<a href="http://unmapped.example/">away</a>')
    result = run_crawl(write_conf(tmp_path, [web.url("a.test", "/")], scope="free-spanning"))
    assert result.status == 0
    assert "robots.txt of http://unmapped.example could not be fetched" in result.log
    assert "DNS lookup failed" in result.log
    assert (
        result.record(web.url("a.test", "/")).links == ()
    )  # its robots.txt is unknown: not listed


def test_an_exception_in_crawler_code_makes_exit_status_1(web, tmp_path):
    web.page("a.test", "/", '<a href="/x.html">x</a>')
    web.page("a.test", "/x.html", "x")
    pipelines = (
        '{"tarantula.pipelines.mirror.MirrorPipeline": 300, "tarantula.pipelines.index.IndexPipeline": 400,'
        ' "tests.helpers.faulty.FaultyPipeline": 500}'
    )
    result = run_crawl(
        write_conf(tmp_path, [web.url("a.test", "/")]), "-s", f"ITEM_PIPELINES={pipelines}"
    )
    assert result.status == 1
    assert "errors               2" in result.process.stdout
    # said last, in the log too (a scrapyd job's log is its only output)
    said = "Exit status 1: 2 errors of Tarantula's own code in this run, named above"
    assert said in result.process.stderr and said in result.log
    assert (
        "FaultyPipeline" in result.process.stdout or "deliberate failure" in result.process.stdout
    )
    assert "Traceback" in result.log  # logged with its traceback where it happened
    assert len(result.records) == 2  # the crawl itself went on


def test_scrapy_check_passes_offline():
    result = scrapy("check", "tarantula")
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stderr


def test_scrapy_check_fails_when_the_callback_stops_extracting(tmp_path):
    package = tmp_path / "brokenspiders"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "broken.py").write_text(
        textwrap.dedent('''
        from tarantula.spiders.tarantula import TarantulaSpider

        class BrokenSpider(TarantulaSpider):
            name = "broken"

            async def parse(self, response):
                """@demo /
                @returns items 1 1
                @returns requests 5
                """
                async for item in super().parse(response):
                    if not hasattr(item, "callback"):  # drop every request: no links followed
                        yield item
        ''')
    )
    env_path = f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "check", "broken", "-s", "SPIDER_MODULES=brokenspiders"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": env_path, "PYTHONWARNINGS": "ignore"},
    )
    assert result.returncode == 1, result.stderr
    assert "FAILED" in result.stderr and "Returned 0 requests" in result.stderr


def test_another_spider_runs_as_with_scrapys_own_command(web, tmp_path):
    """The project's settings name Tarantula's scheduler, pipelines and middlewares; for a spider
    that is not Tarantula's they stand aside (NotConfigured, Scrapy's own scheduler)."""
    web.page("127.0.0.1", "/", "<title>Other</title>")
    spider = tmp_path / "other.py"
    spider.write_text(
        textwrap.dedent(f'''
        import scrapy

        class Other(scrapy.Spider):
            name = "other"
            start_urls = ["{web.url("127.0.0.1", "/")}"]

            def parse(self, response):
                yield {{"title": response.css("title::text").get()}}
        ''')
    )
    out = tmp_path / "items.jsonl"
    result = scrapy("runspider", str(spider), "-O", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(out.read_text()) == {"title": "Other"}
    assert "Traceback" not in result.stderr and "ERROR" not in result.stderr


def test_jobdir_does_not_replace_the_crawl_state(web, tmp_path):
    """Scrapy's JOBDIR keeps a spider state of its own; the crawl's state is not the spider's."""
    web.page("a.test", "/", '<a href="/x.html">x</a>')
    web.page("a.test", "/x.html", "x")
    conf = write_conf(tmp_path, [web.url("a.test", "/")])
    result = run_crawl(conf, "-s", f"JOBDIR={tmp_path / 'job'}")
    assert result.status == 0, result.process.stdout
    assert len(result.records) == 2


def test_a_crawl_loads_no_module_it_does_not_use(web, tmp_path):
    """Start-up is most of a small crawl's cost (docs/benchmarks.md): the modules a crawl of a
    page loads leave out what its parts never use (Scrapy's remote control, which imports
    aiohttp; its cookies middleware, which imports tldextract and requests; Jinja2 until the
    report is written, which this crawl does not; Chromium's driver without a render-list)."""
    web.page("a.test", "/", "<title>One</title>")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], report=False)
    script = textwrap.dedent(f"""
        import atexit, json, sys
        atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))
        sys.argv = ["scrapy", "crawl", "tarantula", "-a", "conf={conf}"]
        from scrapy.cmdline import execute
        execute()
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=PROJECT, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stderr.strip().splitlines()[-1]))
    assert "tarantula.spiders.tarantula" in loaded  # it did crawl
    assert not loaded & {"aiohttp", "tldextract", "requests", "jinja2", "playwright"}


def test_the_tarantula_command_crawls_from_any_folder(web, tmp_path):
    """SPEC 1: installed, the project runs from any folder, with no scrapy.cfg there: `tarantula
    crawl CONF` is the crawl, `tarantula verify CONF` its check; `scrapy crawl` there says what to
    run instead."""
    web.page("a.test", "/", '<title>Home</title><a href="/b.html">b</a>')
    web.page("a.test", "/b.html", "<title>B</title>")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], log_level=1)
    command = Path(sys.executable).parent / "tarantula"
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    crawled = subprocess.run([str(command), "crawl", conf.name], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert crawled.returncode == 0, crawled.stderr
    assert "documents stored     2" in crawled.stdout
    verified = subprocess.run([str(command), "verify", conf.name], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    assert verified.returncode == 0 and "no problems" in verified.stderr, verified.stderr
    outside = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "tarantula", "-a",
                              f"conf={conf.name}"], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert outside.returncode == 2
    assert "run `tarantula crawl CONF`" in outside.stderr
    assert "Scrapy 2" not in outside.stderr  # no crawler process started: no banner first
