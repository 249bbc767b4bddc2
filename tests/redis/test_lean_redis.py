"""End-to-end, against a real redis-server: Redis keeps what a shared crawl shares (the frontier
and per-URL essentials), not its index records, which live in the repository folder (SPEC 9): at
most 400 bytes of Redis memory a stored document, measured on a two-worker crawl of 4,000
documents, whose index, records and ``scrapy verify`` come from the folder."""

from __future__ import annotations

from collections import Counter

import pytest
import redis

from tarantula.commands.verify import verify
from tarantula.core.config import load_config
from tarantula.core.index import parse_index
from tarantula.core.layout import STATE_FOLDER
from tarantula.demo.server import Resource
from tarantula.store import state_figures
from tarantula.store.redis.records import RECORDS_FOLDER
from tests.helpers.crawls import write_conf
from tests.helpers.redis_server import RedisServer
from tests.helpers.shared import finish, start_worker

pytestmark = pytest.mark.redis

HOSTS = [f"h{i}.test" for i in range(4)]
PAGES = 1000  # on each host, besides its root and its sections
SECTIONS = 20  # the root links to each, each to its pages
LINKS = 8  # a page links to the next pages of its host
HTML = {"Content-Type": "text/html"}


def path(i: int) -> str:
    return f"/docs/section-{i % SECTIONS}/page-{i}.html"


def crawl_memory(server: RedisServer) -> int:
    """The bytes of Redis memory the crawl's keys hold: ``used_memory`` less what is left once they
    are deleted. Not counted: what the server keeps after any crawl, whatever its size (its
    scripts, and some 0.85 MB more after a crawl of 41 pages as of 4,084)."""
    client = redis.Redis(port=server.port)
    try:
        held = int(client.info("memory")["used_memory"])
        keys = list(client.scan_iter("tarantula:*", count=1000))
        for i in range(0, len(keys), 1000):
            client.delete(*keys[i : i + 1000])
        return held - int(client.info("memory")["used_memory"])
    finally:
        client.close()


def test_redis_keeps_under_400_bytes_a_stored_document(web, tmp_path):
    """Pages like a documentation site's (a title, links to their neighbours) on four hosts; two
    workers; the memory the crawl's keys hold once it is over. The records of an index took some
    2 KB a document in Redis before they moved to the folder (366 bytes a document with them
    there, when this test was written: 184 the documents, 72 their contents' MD5s, 109 the
    seen-set with the copies' paths, 4,096 buckets sized for a million URLs)."""
    for n, host in enumerate(HOSTS):
        for i in range(PAGES):
            links = "".join(
                f'<a href="{path((i + k) % PAGES)}">page {k}</a>' for k in range(1, LINKS + 1)
            )
            body = f"<title>{host}, page {i}</title><p>Section {i % SECTIONS}.</p>{links}"
            web.add(host, path(i), Resource(body.encode(), headers=HTML))
        for k in range(SECTIONS):
            pages = "".join(f'<a href="{path(i)}">{i}</a>' for i in range(k, PAGES, SECTIONS))
            body = f"<title>{host}, section {k}</title>{pages}"
            web.add(host, f"/docs/section-{k}/", Resource(body.encode(), headers=HTML))
        sections = "".join(f'<a href="/docs/section-{k}/">{k}</a>' for k in range(SECTIONS))
        after = web.url(HOSTS[(n + 1) % len(HOSTS)], "/")
        body = f'<title>{host}</title>{sections}<a href="{after}">next</a>'
        web.add(host, "/", Resource(body.encode(), headers=HTML))
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        conf = write_conf(tmp_path, [web.url(HOSTS[0], "/")], redis=server.url, threads=4,
                          host_concurrency=4, log_level=1, scope="free-spanning")  # fmt: skip
        finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
        config = load_config(conf)
        figures = state_figures(config)
        problems = list(verify(config))
        held = crawl_memory(server)
    finally:
        server.stop()
    root = tmp_path / "repo"
    records = list(parse_index((root / "index.txt").read_text(encoding="utf-8")))
    documents = len(HOSTS) * (1 + SECTIONS + PAGES)
    assert len(records) == documents and len({r.url for r in records}) == documents
    # The index's records are whole: titles and links came from the folder, not from Redis.
    links = Counter(len(r.links) for r in records if "/page-" in r.url)
    assert links == {LINKS: len(HOSTS) * PAGES}
    assert all(r.title and r.title.startswith("h") for r in records)
    assert sorted(p.name for p in (root / STATE_FOLDER / RECORDS_FOLDER).glob("*.db")) == [
        "w1.db",
        "w2.db",
    ]
    assert figures.documents == documents and figures.types == {"html": documents}
    assert problems == []
    per_document = held / documents
    assert per_document <= 400, f"{held:,} bytes of Redis memory: {per_document:.0f} a document"
