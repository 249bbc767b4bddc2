"""The workers of a crawl shared through Redis, as ``scrapy crawl`` processes: a config for them
(:func:`shared_conf`), starting one (:func:`start_worker`) and waiting for all to end
(:func:`finish`), and the link lines of the index they build (:func:`link_lines`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tarantula.core.config import load_config
from tarantula.core.index import parse_index
from tarantula.demo.server import RequestRecord, Resource, SiteServer
from tarantula.store.redis.runs import Workers
from tarantula.store.redis.shared import crawl_id, key_prefix
from tests.helpers.crawls import start_scrapy, wait_for, write_conf
from tests.helpers.redis_server import RedisServer


def start_worker(conf: Path, name: str, *settings: str) -> subprocess.Popen[str]:
    """A worker of the crawl in ``conf``, logging to ``<name>.log`` next to it, with Scrapy
    ``settings`` (``NAME=VALUE``) besides."""
    log = conf.parent / f"{name}.log"
    extra = [arg for setting in settings for arg in ("-s", setting)]
    worker = start_scrapy("crawl", "tarantula", "-a", f"conf={conf}", "-a", f"worker={name}",
                          "-s", f"LOG_FILE={log}", *extra)  # fmt: skip
    LOGS[worker.pid] = log
    return worker


#: Worker process id -> its log file (see finish).
LOGS: dict[int, Path] = {}


def finish(*workers: subprocess.Popen[str], timeout: float = 240) -> list[str]:
    """Wait for every worker; each must exit 0, and have done with every lease it took
    (:mod:`tarantula.leases`: a finished worker logs any it left out). Returns their outputs."""
    outputs = []
    for worker in workers:
        out, _ = worker.communicate(timeout=timeout)
        assert worker.returncode == 0, out
        log = LOGS.pop(worker.pid, None)
        if log is not None and log.exists():
            assert "leased URLs were never done with" not in log.read_text(encoding="utf-8")
        outputs.append(out)
    return outputs


def shared_conf(folder: Path, seed: str | list[str], redis: RedisServer, **keys: object) -> Path:
    """A config for the workers of a crawl of ``seed`` (a URL, or a list of them) shared through
    ``redis``."""
    folder.mkdir(exist_ok=True)
    # A slot of the host for each thread of both workers: one worker's threads cannot hold them
    # all and starve the other (the test sites have one host).
    keys = {"threads": 4, "host_concurrency": 8, "log_level": 1, **keys}
    seeds = [seed] if isinstance(seed, str) else seed
    return write_conf(folder, seeds, redis=redis.url, **keys)


def link_lines(index: Path) -> dict[str, tuple[tuple[str, str], ...]]:
    return {r.url: r.links for r in parse_index(index.read_text(encoding="utf-8"))}


def figure(page: str, key: str) -> str:
    """A figure of a report page, as shown."""
    match = re.search(rf'data-key="{key}"><dt>[^<]*</dt><dd>([^<]*)', page)
    assert match is not None, key
    return match[1].strip()


def browse_files(root: Path) -> dict[str, bytes]:
    """The files of ``root``'s ``browse/``, by path."""
    return {
        str(p.relative_to(root / "browse")): p.read_bytes()
        for p in (root / "browse").rglob("*")
        if p.is_file()
    }


def wait_for_workers(web: SiteServer, conf: Path, redis: RedisServer, target: str,
                     body: bytes, names: tuple[str, ...] = ("w1", "w2"), host: str = "a.test",
                     ) -> None:  # fmt: skip
    """Answer ``target`` on ``host`` with the HTML ``body`` only once every worker in ``names``
    is live, so that each takes a part of the crawl (one run, not a crawl and a recrawl) however
    slowly one of them starts on a loaded machine."""
    client = redis.client()
    workers = Workers(client, key_prefix(crawl_id(load_config(conf))), "")

    def answer(record: RequestRecord) -> Resource:
        wait_for(lambda: set(names) <= set(workers.live()), timeout=120)
        return Resource(body, headers={"Content-Type": "text/html"})

    web.add(host, target, answer)
