"""End-to-end, against a real redis-server: churn (SPEC 9). Three workers are killed (SIGKILL) and
restarted again and again while they crawl, and the Redis server is killed once and restarted from
its append-only file (``appendfsync always``); the crawl ends with every page indexed once, and
only URLs that a killed worker (or the killed server) held leased are fetched twice."""

from __future__ import annotations

import random
from collections import Counter
from urllib.parse import urlsplit

import pytest

from tarantula.core.config import load_config
from tarantula.store.redis.codec import url_id
from tarantula.store.redis.runs import Workers
from tarantula.store.redis.shared import crawl_id, key_prefix
from tests.helpers.crawls import wait_for
from tests.helpers.shared import finish, shared_conf, start_worker
from tests.helpers.treesite import assert_whole, tree_site

pytestmark = pytest.mark.redis

WORKERS = 3
KILLS = 8  # of workers; the Redis server is killed once, after the fourth
EVERY = 12  # pages fetched between two kills


def test_workers_and_the_redis_server_killed_and_restarted_lose_nothing(web, tmp_path,
                                                                       redis_servers):  # fmt: skip
    server = redis_servers(appendonly=True)  # appendfsync always
    urls = tree_site(web, delay=0.05)
    conf = shared_conf(tmp_path, urls[0], server, lease_timeout=3)
    prefix = key_prefix(crawl_id(load_config(conf)))
    owners_key = prefix + "owner"
    choose = random.Random(21)
    live = {f"w{i}": start_worker(conf, f"w{i}") for i in range(WORKERS)}
    held: set[bytes] = set()  # leases out when a worker or the server was killed
    started = WORKERS
    kills = 0

    def leases(worker: str | None = None) -> set[bytes]:
        client = server.client()
        try:
            owners = client.hgetall(owners_key)
        finally:
            client.close()
        return {h8 for h8, owner in owners.items() if worker is None or owner == worker.encode()}

    def registered() -> list[str]:
        client = server.client()
        try:
            return Workers(client, prefix, "").live()
        finally:
            client.close()

    def running() -> bool:
        return any(p.poll() is None for p in live.values())

    while kills < KILLS and running():
        due = len(web.requests) + EVERY
        wait_for(lambda due=due: len(web.requests) >= due or not running(), timeout=120)
        if not running():
            break
        name = choose.choice(sorted(n for n, p in live.items() if p.poll() is None))
        victim = live.pop(name)
        victim.kill()
        victim.communicate()
        held |= leases(name)
        kills += 1
        restarts = 1
        if kills == KILLS // 2:
            # A worker still starting would find no Redis and exit 2, as with a bad address, which
            # is not what this test is about: those are killed with the server (waiting for them
            # to start would let the others finish the crawl meanwhile), and started again after.
            starting = sorted(set(live) - set(registered()))
            for name in starting:
                process = live.pop(name)
                process.kill()
                process.communicate()
                held |= leases(name)
            restarts += len(starting)
            held |= leases()
            server.stop(kill=True)
            server.start(port=server.port)  # from its append-only file
        for _ in range(restarts):
            live[f"w{started}"] = start_worker(conf, f"w{started}")
            started += 1
    finish(*live.values(), timeout=240)
    assert kills >= KILLS // 2 + 1, "the crawl ended before the server was killed"
    indexed = assert_whole(web, tmp_path / "repo")
    # On a failure, what the workers said of given-up URLs and lost leases (their logs).
    said = [line for log in tmp_path.glob("w*.log")
            for line in log.read_text(encoding="utf-8").splitlines()
            if "given up" in line or "stopped answering" in line or "reply lost" in line]  # fmt: skip
    missing = sorted(set(urls) - set(indexed))
    assert sorted(indexed) == sorted(urls), ("every page indexed exactly once", missing, said)
    fetches = Counter(r.target for r in web.requests if r.target != "/robots.txt")
    assert set(fetches) == {urlsplit(u).path for u in urls}
    by_target = {urlsplit(u).path: u for u in urls}
    again = {url_id(by_target[t])[0] for t, n in fetches.items() if n > 1}
    assert again <= held, (len(again - held), len(held))
