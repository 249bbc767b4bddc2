"""The benchmark harness: the generated web is deterministic and complete, and a tiny run works."""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import pytest

from bench.generate import generate, load_manifest
from bench.measure import mount_type
from bench.servers import nginx_binary

PROJECT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def file_of(web: Path, url: str) -> Path:
    parts = urlsplit(url)
    path = parts.path + ("index.html" if parts.path.endswith("/") else "")
    return web / (parts.hostname or "") / path.lstrip("/")


def test_generated_web_is_deterministic_and_reachable(tmp_path: Path) -> None:
    first, second, other = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    manifest = generate(first, "tiny", seed=7, port=8080)
    generate(second, "tiny", seed=7, port=8080)
    generate(other, "tiny", seed=8, port=8080)
    assert tree(first) == tree(second)
    assert tree(first) != tree(other)
    assert load_manifest(first) == manifest
    assert manifest["seed"] == "http://h00.bench.test:8080/"
    assert len(manifest["hosts"]) == 2 and manifest["pages"] == 300

    robots: dict[str, RobotFileParser] = {}
    for host in manifest["hosts"]:
        parser = RobotFileParser()
        parser.parse((first / host / "robots.txt").read_text().splitlines())
        robots[host] = parser

    # Walk the files from the seed as a crawler that obeys robots.txt would.
    seen, queue, linked_but_disallowed = {manifest["seed"]}, [manifest["seed"]], set()
    while queue:
        url = str(queue.pop())
        body = file_of(first, url).read_bytes()
        if url.endswith(".pdf"):
            assert body.startswith(b"%PDF-") and body.rstrip().endswith(b"%%EOF")
            continue
        assert 5_000 <= len(body) <= 30_000, url
        page = _Page()
        page.feed(body.decode("utf-8"))
        assert page.title.strip(), url
        assert 10 <= len(page.hrefs) <= 40, url
        for href in page.hrefs:
            target = urljoin(url, href)
            host = urlsplit(target).hostname or ""
            assert host in robots, target
            if not robots[host].can_fetch("tarantula", target):
                linked_but_disallowed.add(target)
            elif target not in seen:
                assert file_of(first, target).is_file(), target
                seen.add(target)
                queue.append(target)
    assert seen == set(manifest["urls"])
    assert linked_but_disallowed == set(manifest["disallowed"])
    assert any(u.endswith(".pdf") for u in seen)


#: The crawlers of the run against the asyncio server: besides the default pair, each output's
#: crawl and Scrapy's two fetch floors, measured in one run of the harness (one web, one server).
_EVERY_KIND = "tarantula,scrapy,tarantula-warc,tarantula-browse,scrapy-fetch,scrapy-fetch-lean"


def test_a_report_names_the_file_system_of_its_work_folder() -> None:
    # Creating a file costs some file systems far more than others: the report says which one
    # held the repositories. The longest mount point above the folder counts.
    mounts = (
        "/dev/vda / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n/dev/vdb /my\\040disk xfs rw 0 0\n"
    )
    assert mount_type("/dev/shm/tarantula-bench-x/run-1", mounts) == "tmpfs"
    assert mount_type("/dev/shmem/x", mounts) == "ext4"  # a prefix of a name is not a folder above
    assert mount_type("/tmp/x", mounts) == "ext4"
    assert mount_type("/my disk/x", mounts) == "xfs"
    assert mount_type("/x", "") == "unknown"


@pytest.mark.parametrize("server", ["nginx", "asyncio"])
def test_tiny_benchmark_runs(tmp_path: Path, server: str) -> None:
    if server == "nginx" and nginx_binary() is None:
        pytest.skip("nginx is not installed (Debian package nginx; .ci/run installs it)")
    command = [sys.executable, "-m", "bench.run", "--preset", "tiny", "--runs", "1"]
    command += ["--no-nginx", "--crawlers", _EVERY_KIND] if server == "asyncio" else []
    done = subprocess.run(
        [*command, "--results-dir", str(tmp_path)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    medians = done.stdout.split("## Medians", 1)[1]
    header, _, *lines = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in medians.splitlines()
        if line.startswith("|")
    ]
    rows = {cells[0]: dict(zip(header, cells, strict=True)) for cells in lines}
    kinds = _EVERY_KIND.split(",") if server == "asyncio" else ["tarantula", "scrapy"]
    assert set(rows) == set(kinds), done.stdout
    assert rows["tarantula"]["complete"] == "100.0%", done.stdout
    assert all(row["exit"] == "0" for row in rows.values()), done.stdout
    assert int(rows["scrapy"]["pages"]) >= 300, done.stdout  # the PDFs are ignored extensions
    (written,) = tmp_path.glob("tiny-*.md")
    report = written.read_text(encoding="utf-8")
    assert "| tarantula | median of 1 |" in report
    assert f"- server: {server}" in report, report
    assert "- work folder (the web, the repositories): " in report, report
    if server == "asyncio":
        # warc and browsable against the plain crawl, each output's crawl complete
        for name in ("tarantula-warc", "tarantula-browse"):
            assert f"| {name} | median of 1 | 304 |" in done.stdout, done.stdout
            assert f"- {name} / tarantula (medians): pages/s " in done.stdout, done.stdout
        # Scrapy's floors: every URL of the web, PDFs included, fetched once, nothing followed,
        # nothing missed; the lean floor without the components it leaves out
        for floor in ("scrapy-fetch", "scrapy-fetch-lean"):
            assert f"| {floor} | median of 1 | 304 |" in done.stdout, done.stdout
            assert f"- tarantula / {floor} (medians): CPU s / 1k pages " in done.stdout
        assert "is on" not in done.stdout, done.stdout
        twice = [line for line in done.stdout.splitlines() if "fetched twice" in line]
        assert all(line.startswith("- scrapy: ") for line in twice), done.stdout  # CrawlSpider's


def bench(module: str, *args: str, results: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args, "--results-dir", str(results)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_verify_benchmark_builds_a_whole_repository(tmp_path: Path) -> None:
    done = bench("bench.verify", "--documents", "300", "--hosts", "2", "--runs", "1",
                 results=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "browsable = no: 300 documents, 300 files: no problems" in done.stdout, done.stdout
    assert "300 browse files" in done.stdout and "problem reported" not in done.stdout
    assert len(list(tmp_path.glob("verify-*.md"))) == 1


def test_tarantula_shared_through_redis_against_one_process(tmp_path: Path) -> None:
    if not Path("/usr/bin/redis-server").exists():
        reason = "redis-server is not installed (Debian package redis-server; .ci/run installs it)"
        if os.environ.get("TARANTULA_REQUIRE_REDIS"):
            pytest.fail(reason)
        pytest.skip(reason)
    crawlers = "tarantula,tarantula-redis1,tarantula-redis2"
    done = bench("bench.run", "--preset", "tiny", "--runs", "1", "--no-nginx", "--crawlers",
                 crawlers, results=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("tarantula-redis1", "tarantula-redis2"):
        assert f"| {name} | median of 1 | 304 |" in done.stdout, done.stdout  # all, each once
        assert f"- {name} / tarantula (medians): pages/s " in done.stdout, done.stdout
    assert "- two workers / one worker: pages/s " in done.stdout, done.stdout


def test_tarantula_against_a_baseline_revision_of_itself(tmp_path: Path) -> None:
    def worktrees() -> str:
        return subprocess.run(["git", "worktree", "list"], cwd=PROJECT, capture_output=True,
                              text=True, check=True).stdout  # fmt: skip

    before = worktrees()
    done = bench("bench.run", "--preset", "tiny", "--runs", "1", "--no-nginx", "--crawlers",
                 "tarantula", "--baseline", "HEAD", results=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| tarantula@HEAD | median of 1 | 304 |" in done.stdout, done.stdout
    assert "- tarantula / tarantula@HEAD (medians): CPU s / 1k pages " in done.stdout, done.stdout
    assert worktrees() == before  # the baseline's worktree is gone


def test_wget_joins_the_crawlers_named_when_asked():
    """``--wget`` adds wget to the crawlers ``--crawlers`` names (it was dropped before); the
    latency preset times wget by default only."""
    from bench.run import crawlers_of, parse_args

    named = parse_args(["--crawlers", "tarantula,tarantula-browse", "--wget"])
    assert crawlers_of(named) == ["tarantula", "tarantula-browse", "wget"]
    assert crawlers_of(parse_args(["--preset", "latency"])) == ["tarantula", "scrapy", "wget"]
    assert crawlers_of(parse_args(["--preset", "latency", "--crawlers", "tarantula"])) == [
        "tarantula"
    ]
    assert crawlers_of(parse_args([])) == ["tarantula", "scrapy"]
