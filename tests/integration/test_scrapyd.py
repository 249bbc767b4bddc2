"""Crawls as scrapyd jobs (SPEC 9): a real scrapyd on 127.0.0.1 started with the project's
``scrapyd.conf`` (a password required), the project deployed to it with scrapyd-deploy as a user
would, with the credentials taken from the environment by scrapy.cfg's deploy targets, and the
configuration passed as a spider argument."""

from __future__ import annotations

import base64
import configparser
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tarantula.contracts import DEMO_SITE
from tarantula.core.index import parse_index
from tarantula.demo.server import SiteServer
from tests.helpers.crawls import PROJECT, run_crawl, wait_for, write_conf
from tests.helpers.treesite import tree_site

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("scrapyd")]  # one scrapyd, one deploy

BIN = Path(sys.executable).parent
USERNAME = "tarantula"
PASSWORD = secrets.token_urlsafe(18)
CREDENTIALS = {"SCRAPYD_USERNAME": USERNAME, "SCRAPYD_PASSWORD": PASSWORD}
# Requests go straight to 127.0.0.1 whatever proxy the environment names.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def environment(**values: str) -> dict[str, str]:
    """This process's environment without scrapyd's variables or a proxy, plus ``values``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SCRAPYD_") and k.lower() not in ("http_proxy", "https_proxy")}  # fmt: skip
    return {**env, **values}


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


class Scrapyd:
    """scrapyd started by ``scrapy scrapyd FOLDER`` in ``folder`` with the project's scrapyd.conf,
    on a free port of 127.0.0.1 (SCRAPYD_HTTP_PORT) and with the credentials ``credentials`` in
    its environment. Only the queue's poll interval is changed, so jobs start at once."""

    def __init__(self, folder: Path, credentials: dict[str, str]) -> None:
        conf = configparser.ConfigParser(interpolation=None)
        conf.read(PROJECT / "scrapyd.conf", encoding="utf-8")
        conf["scrapyd"]["poll_interval"] = "0.2"
        with (folder / "scrapyd.conf").open("w", encoding="utf-8") as file:
            conf.write(file)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.folder = folder
        self.logs = folder / conf["scrapyd"]["logs_dir"]
        self.url = f"http://127.0.0.1:{self.port}"  # no trailing slash, as in scrapy.cfg
        self.output = folder / "scrapyd.out"
        with self.output.open("wb") as output:
            self.process = subprocess.Popen(
                [str(BIN / "scrapy"), "scrapyd", str(folder)], cwd=PROJECT, stdout=output,
                stderr=subprocess.STDOUT,
                env=environment(SCRAPYD_HTTP_PORT=str(self.port), **credentials),
            )  # fmt: skip

    def wait_until_serving(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.get("daemonstatus.json")
                return
            except OSError:
                assert self.process.poll() is None, self.output.read_text(encoding="utf-8")
                assert time.monotonic() < deadline, "scrapyd did not start"
                time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)

    def call(
        self,
        endpoint: str,
        form: dict[str, str] | None = None,
        auth: tuple[str, str] | None = (USERNAME, PASSWORD),
    ) -> dict[str, Any]:
        """A GET (``form`` None) or POST to the API, with HTTP Basic ``auth`` unless None."""
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(f"{self.url}/{endpoint}", data)
        if auth is not None:
            request.add_header("Authorization", basic(*auth))
        with DIRECT.open(request, timeout=10) as answer:
            result: dict[str, Any] = json.load(answer)
        return result

    def get(self, endpoint: str, **query: str) -> dict[str, Any]:
        return self.call(endpoint + ("?" + urllib.parse.urlencode(query) if query else ""))

    def post(self, endpoint: str, **form: str) -> dict[str, Any]:
        result = self.call(endpoint, form)
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
        return (self.logs / "tarantula" / "tarantula" / f"{job}.log").read_text(encoding="utf-8")


#: What a deployed project is built from is the project's own files: not the environment, the
#: caches and outputs beside them, which the tests running alongside write to.
NOT_THE_PROJECT = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", ".*_cache", ".hypothesis", ".scrapyd", "build", "*.egg-info",
    "repository",
)  # fmt: skip


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project folder to deploy from. scrapyd-deploy's egg build lists every file
    of the folder it runs in, and fails when one vanishes meanwhile: in the project folder, tests
    running beside this one write and rename Python's cached bytecode."""
    copy = tmp_path_factory.mktemp("deploy") / "tarantula-project"
    shutil.copytree(PROJECT, copy, ignore=NOT_THE_PROJECT)
    return copy


def deploy(
    folder: Path, url: str, *args: str, **credentials: str
) -> subprocess.CompletedProcess[str]:
    """``scrapyd-deploy env ARGS`` from the project folder ``folder``, to SCRAPYD_URL=``url``."""
    return subprocess.run(
        [str(BIN / "scrapyd-deploy"), "env", *args], cwd=folder,
        env=environment(SCRAPYD_URL=url, **credentials),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory, project_copy: Path) -> Iterator[Scrapyd]:
    server = Scrapyd(tmp_path_factory.mktemp("scrapyd"), CREDENTIALS)
    try:
        server.wait_until_serving()
        deployed = deploy(project_copy, server.url, "-p", "tarantula", "-v", "1", **CREDENTIALS)
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        assert '"spiders": 1' in deployed.stdout
        # scrapyd's pid file is kept with its state, in neither its folder nor the project's.
        assert (server.folder / ".scrapyd" / "twistd.pid").is_file()
        assert not (server.folder / "twistd.pid").exists()
        assert not (PROJECT / "twistd.pid").exists()
        yield server
    finally:
        server.stop()


def test_the_documented_setup_binds_to_localhost_and_takes_the_credentials_from_the_environment():
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(PROJECT / "scrapyd.conf", encoding="utf-8")
    assert conf["scrapyd"]["bind_address"] == "127.0.0.1"
    assert conf["scrapyd"]["username"] == "%(SCRAPYD_USERNAME)s"
    assert conf["scrapyd"]["password"] == "%(SCRAPYD_PASSWORD)s"
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(PROJECT / "scrapy.cfg", encoding="utf-8")
    targets = [cfg[name] for name in cfg.sections() if name.split(":")[0] == "deploy"]
    assert cfg["deploy"]["username"] == "${SCRAPYD_USERNAME}"  # [deploy] holds for every target
    assert cfg["deploy"]["password"] == "${SCRAPYD_PASSWORD}"
    assert all("password" not in t or t["password"] == "${SCRAPYD_PASSWORD}" for t in targets)
    assert not [t["url"] for t in targets if t["url"].endswith("/")]


@pytest.mark.parametrize("unset", ["SCRAPYD_USERNAME", "SCRAPYD_PASSWORD"])
def test_scrapyd_does_not_start_without_credentials(tmp_path, unset):
    # scrapyd itself would start and serve everyone; `scrapy scrapyd` says so in one line.
    server = Scrapyd(tmp_path, {k: v for k, v in CREDENTIALS.items() if k != unset})
    try:
        status = server.process.wait(timeout=30)
    finally:
        if server.process.poll() is None:
            server.stop()
    output = server.output.read_text(encoding="utf-8")
    assert status == 2
    assert output.splitlines() == [
        f"error: scrapyd serves only with a user name and password: set {unset} "
        "(docs/operations.md, 'Running under scrapyd')"
    ]
    # Started plainly, scrapyd fails too (the configuration refers to the unset variable).
    plain = subprocess.run(
        [str(BIN / "scrapyd")], cwd=tmp_path, capture_output=True, text=True, timeout=30,
        env=environment(SCRAPYD_HTTP_PORT=str(server.port)),
    )  # fmt: skip
    assert plain.returncode != 0
    assert "interpolation key 'scrapyd_" in plain.stdout + plain.stderr
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.port), timeout=5):
        pass


@pytest.mark.parametrize("auth", [None, (USERNAME, "not-the-password"), ("someone", PASSWORD)])
def test_requests_without_the_credentials_are_refused(scrapyd, tmp_path, auth):
    conf = write_conf(tmp_path, ["http://a.test/"])
    form = {"project": "tarantula", "spider": "tarantula", "conf": str(conf)}
    for endpoint, data in [("schedule.json", form), ("listjobs.json?project=tarantula", None),
                           ("daemonstatus.json", None), ("", None)]:  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as refused:
            scrapyd.call(endpoint, data, auth=auth)
        assert refused.value.code == 401, endpoint
    jobs = scrapyd.get("listjobs.json", project="tarantula")
    assert not any(jobs[state] for state in ("pending", "running")), jobs


def test_a_deploy_without_the_credentials_is_refused(scrapyd, project_copy):
    # Unset variables: scrapyd-deploy sends "${SCRAPYD_USERNAME}" as written.
    for credentials in [{}, {**CREDENTIALS, "SCRAPYD_PASSWORD": "not-the-password"}]:
        refused = deploy(project_copy, scrapyd.url, "-p", "intruder", "-v", "1", **credentials)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "Deploy failed (401)" in refused.stderr
    assert scrapyd.get("listprojects.json")["projects"] == ["tarantula"]


def test_a_crawl_runs_as_a_scrapyd_job(scrapyd, tmp_path):
    with SiteServer(root=DEMO_SITE) as web:
        seeds = [web.url("www.demo.test", "/")]
        job_conf = write_conf(tmp_path, seeds, scope="domain-scope", threads=2)
        # Scheduled as docs/operations.md shows: scrapyd-client with scrapy.cfg's target and credentials.
        scheduled = subprocess.run(
            [str(BIN / "scrapyd-client"), "schedule", "-t", "env", "-p", "tarantula", "tarantula",
             "--arg", f"conf={job_conf}"],
            cwd=PROJECT, env=environment(SCRAPYD_URL=scrapyd.url, **CREDENTIALS),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert scheduled.returncode == 0, scheduled.stdout + scheduled.stderr
        found = re.search(r"tarantula / tarantula => (\w+)", scheduled.stdout)
        assert found, scheduled.stdout + scheduled.stderr
        job = found[1]
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
