"""Crawls run as a user runs them: config files (:func:`write_conf`), ``scrapy crawl`` and other
``scrapy`` commands run to their end (:func:`run_crawl`, :func:`run_scrapy`) or started in the
background (:func:`start_scrapy`), and what the recording server saw of them
(:func:`max_in_flight`).

Every host name a test uses ends in ``.test`` and is mapped to 127.0.0.1 by the config's
``resolve`` key with ``resolve-only = yes``, so no DNS query ever leaves the machine.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tarantula.core.index import IndexRecord, parse_index
from tarantula.core.layout import OWN_NAMES
from tarantula.demo.server import RequestRecord

PROJECT = Path(__file__).resolve().parents[2]
RESOLVE = ("*.test=127.0.0.1",)


def conf_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return "{ " + ", ".join(f'"{v}"' for v in value) + " }"
    if isinstance(value, (int, float)):
        return repr(value)
    return f'"{value}"'


def write_conf(folder: Path, seeds: list[str], **keys: Any) -> Path:
    """A config file in ``folder``: keys given as Python names (``max_page_number=3``); test defaults
    are no delay, one thread, the repository ``repo`` next to the file, logs at level 1 to ``log``
    (a test that reads what only level 2 logs, the stats or each link dropped, asks for it)."""
    values: dict[str, Any] = {
        "delay": 0,
        "threads": 1,
        "repository": "repo",
        "log_file": "log",
        "log_level": 1,
        "resolve": RESOLVE,
        "resolve_only": True,
    }
    values.update(keys)
    lines = ["<crawler-options>", f"starting-points = {conf_value(seeds)};"]
    sections = {
        "log_file": "logging",
        "log_level": "logging",
        "period": "recrawling-options",
        "threads": "multithreading-options",
        "processes": "multithreading-options",
        "warc": "output-options",
        "wacz": "output-options",
        "browsable": "output-options",
        "page_requisites": "output-options",
        "max_requisites": "output-options",
        "report": "output-options",
        "redis": "distributed-options",
        "lease_timeout": "distributed-options",
        "netrc": "authentication-options",
        "cookies": "authentication-options",
        "login_url": "authentication-options",
        "login_fields": "authentication-options",
        "logged_in_text": "authentication-options",
    }
    for key, value in values.items():
        if key not in sections:
            lines.append(f"{key.replace('_', '-')} = {conf_value(value)};")
    for key, value in values.items():
        if key in sections:
            lines += [f"<{sections[key]}>", f"{key.replace('_', '-')} = {conf_value(value)};"]
    path = folder / "crawl.conf"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass
class Crawl:
    """The outcome of one ``scrapy crawl tarantula`` run."""

    process: subprocess.CompletedProcess[str]
    repository: Path
    log: str
    stats: dict[str, Any]
    """The run's final Scrapy stats, as the crawl wrote them (``.tarantula/stats.json``), read
    when the run ended: a later run of the same repository writes its own."""

    @property
    def status(self) -> int:
        return self.process.returncode

    @property
    def index_text(self) -> str:
        path = self.repository / "index.txt"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    @property
    def records(self) -> list[IndexRecord]:
        return list(parse_index(self.index_text))

    def record(self, url: str) -> IndexRecord:
        (found,) = [r for r in self.records if r.url == url]
        return found

    @property
    def urls(self) -> list[str]:
        return [r.url for r in self.records]

    def files(self) -> list[str]:
        """Mirror files, relative to the repository, sorted (the repository's own files, such as the
        index, the crawl state, the report and other outputs, excluded)."""
        return sorted(
            str(p.relative_to(self.repository))
            for p in self.repository.rglob("*")
            if p.is_file() and p.relative_to(self.repository).parts[0] not in OWN_NAMES
        )


def run_crawl(conf: Path, *args: str, timeout: float = 120) -> Crawl:
    """Run ``scrapy crawl tarantula -a conf=CONF`` from the project folder, as a user would."""
    stats_path = conf.parent / "repo" / ".tarantula" / "stats.json"
    stats_path.unlink(missing_ok=True)  # only this run's
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("http_proxy", None)
    env.pop("HTTP_PROXY", None)
    process = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "tarantula", "-a", f"conf={conf}", *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    log_path = conf.parent / "log"
    log = log_path.read_text(encoding="utf-8") if log_path.exists() else process.stderr
    stats = json.loads(stats_path.read_text("utf-8")) if stats_path.exists() else {}
    check_leases(stats)
    return Crawl(process, conf.parent / "repo", log, stats)


def check_leases(stats: dict[str, Any]) -> None:
    """Every crawl a test runs keeps the leases' contract (:mod:`tarantula.leases`): a lease ends
    once (an error in the crawler's own code, which ends its URL's lease whatever was done with it
    already, aside), and none is left out when the crawl finishes."""
    if "tarantula/failures/error" not in stats:
        assert "tarantula/leases/ended-unheld" not in stats, "a lease was ended twice"
    assert "tarantula/leases/unended" not in stats, "a finished crawl left leases out"


def run_scrapy(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``scrapy ARGS...`` from the project folder (a command such as ``verify``, ``explain``)."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def max_in_flight(records: list[RequestRecord], host: str | None = None) -> int:
    """The largest number of requests (to ``host``, or to any host) that the server was
    answering at one time. Exact: the server stamps an end before the answer's last write."""
    chosen = [r for r in records if host is None or r.host == host]
    events = sorted([(r.time, 1) for r in chosen] + [(r.end, -1) for r in chosen])
    current = peak = 0
    for _, delta in events:
        current += delta
        peak = max(peak, current)
    return peak


def start_scrapy(*args: str) -> subprocess.Popen[str]:
    """Start ``scrapy ARGS...`` from the project folder; its output goes to one pipe."""
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", *args],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def start_crawl(conf: Path) -> subprocess.Popen[str]:
    return start_scrapy("crawl", "tarantula", "-a", f"conf={conf}")


def start_watch(conf: Path) -> subprocess.Popen[str]:
    return start_scrapy("watch", str(conf))


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def write_site(root: Path, pages: dict[str, str]) -> None:
    """Pages of host a.test as files under ``root`` (``SiteServer(root=root)`` serves them, with
    validators a recrawl asks with): file name -> HTML."""
    for name, html in pages.items():
        path = root / "a.test" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")


def png(red: int, green: int, blue: int, size: int = 1) -> bytes:
    """A ``size`` x ``size`` PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    pixels = zlib.compress((b"\0" + bytes([red, green, blue]) * size) * size)
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )
