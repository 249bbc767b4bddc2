"""Crawls as scrapyd jobs (SPEC 9): a real scrapyd on 127.0.0.1, the project deployed to it with
scrapyd-deploy as a user would, and the configuration passed as a spider argument."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tarantula.contracts import DEMO_SITE
from tarantula.core.index import parse_index
from tarantula.demo.server import SiteServer

from ..conftest import PROJECT, run_crawl, write_conf
from .test_recovery import tree_site, wait_for


class Scrapyd:
    def __init__(self, folder: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        (folder / "scrapyd.conf").write_text(
            "[scrapyd]\nbind_address = 127.0.0.1\n"
            f"http_port = {self.port}\neggs_dir = eggs\nlogs_dir = logs\nitems_dir =\n"
            "dbs_dir = dbs\npoll_interval = 0.2\n",
            encoding="utf-8",
        )
        self.folder = folder
        self.url = f"http://127.0.0.1:{self.port}/"
        scrapyd = Path(sys.executable).with_name("scrapyd")
        self.process = subprocess.Popen(
            [str(scrapyd)], cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                self.get("daemonstatus.json")
                break
            except OSError:
                assert time.monotonic() < deadline, "scrapyd did not start"
                time.sleep(0.1)

    def get(self, endpoint: str, **query: str) -> dict[str, Any]:
        url = self.url + endpoint + ("?" + urllib.parse.urlencode(query) if query else "")
        with urllib.request.urlopen(url, timeout=10) as answer:
            result: dict[str, Any] = json.load(answer)
        return result

    def post(self, endpoint: str, **form: str) -> dict[str, Any]:
        data = urllib.parse.urlencode(form).encode()
        with urllib.request.urlopen(self.url + endpoint, data, timeout=10) as answer:
            result: dict[str, Any] = json.load(answer)
        assert result["status"] == "ok", result
        return result

    def schedule(self, conf: Path) -> str:
        job = self.post("schedule.json", project="tarantula", spider="tarantula", conf=str(conf))
        return str(job["jobid"])

    def state(self, job: str) -> str | None:
        jobs = self.get("listjobs.json", project="tarantula")
        return next((state for state in ("pending", "running", "finished")
                     if any(j["id"] == job for j in jobs[state])), None)  # fmt: skip

    def wait(self, job: str, state: str = "finished", timeout: float = 60) -> None:
        wait_for(lambda: self.state(job) == state, timeout)

    def log(self, job: str) -> str:
        return (self.folder / "logs" / "tarantula" / "tarantula" / f"{job}.log").read_text(
            encoding="utf-8"
        )


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scrapyd]:
    server = Scrapyd(tmp_path_factory.mktemp("scrapyd"))
    try:
        deploy = subprocess.run(
            [str(Path(sys.executable).with_name("scrapyd-deploy")), "env", "-p", "tarantula",
             "-v", "1"],
            cwd=PROJECT, env={**os.environ, "SCRAPYD_URL": server.url},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert deploy.returncode == 0, deploy.stdout + deploy.stderr
        assert '"spiders": 1' in deploy.stdout
        yield server
    finally:
        server.process.terminate()
        server.process.wait(timeout=10)


def test_a_crawl_runs_as_a_scrapyd_job(scrapyd, tmp_path):
    with SiteServer(root=DEMO_SITE) as web:
        seeds = [web.url("www.demo.test", "/")]
        job_conf = write_conf(tmp_path, seeds, scope="domain-scope", threads=2)
        job = scrapyd.schedule(job_conf)
        scrapyd.wait(job)
        direct_folder = tmp_path / "direct"
        direct_folder.mkdir()
        direct = run_crawl(write_conf(direct_folder, seeds, scope="domain-scope", threads=2))
    index = (tmp_path / "repo" / "index.txt").read_text(encoding="utf-8")
    assert len(direct.records) > 20
    assert sorted(r.url for r in parse_index(index)) == sorted(direct.urls)
    log = scrapyd.log(job)  # scrapyd's log setting wins over the config's log-file
    assert "Crawl finished (finished)" in log and "errors               0" in log


def test_a_bad_configuration_fails_the_job_with_its_message(scrapyd, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text('starting-points = { "http://a.test/" };\nthreds = 4;\n', encoding="utf-8")
    job = scrapyd.schedule(conf)
    scrapyd.wait(job)
    assert f"{conf}:2:1: error: unknown key 'threds'; did you mean 'threads'?" in scrapyd.log(job)
    assert not (tmp_path / "repository").exists()


def test_a_cancelled_job_resumes_when_scheduled_again(scrapyd, tmp_path):
    with SiteServer() as web:
        urls = tree_site(web, pages=60, delay=0.2)
        conf = write_conf(tmp_path, [urls[0]], threads=2, host_concurrency=2)
        index = tmp_path / "repo" / "index.txt"
        first = scrapyd.schedule(conf)
        wait_for(lambda: index.exists() and index.read_text(encoding="utf-8").count("\n") >= 10, 60)
        scrapyd.post("cancel.json", project="tarantula", job=first)  # a graceful stop
        scrapyd.wait(first)
        stored = {r.url for r in parse_index(index.read_text(encoding="utf-8"))}
        assert 0 < len(stored) < 60
        seen = len(web.requests)
        second = scrapyd.schedule(conf)
        scrapyd.wait(second)
        fetched_again = {web.url("a.test", r.target) for r in web.requests[seen:]} & stored
    assert "Resumed crawl finished (finished)" in scrapyd.log(second)
    assert sorted(r.url for r in parse_index(index.read_text(encoding="utf-8"))) == sorted(urls)
    assert not fetched_again
