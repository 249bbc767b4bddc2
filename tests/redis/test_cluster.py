"""A crawl shared through a real Redis Cluster of three nodes (SPEC 9): the configuration may name
any node; every key of a crawl shares one hash slot, so the crawl's scripts run on the node that
serves it."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from tarantula.core.config import load_config
from tarantula.store.redis.shared import connect, crawl_id, key_prefix, serving_node
from tests.helpers.crawls import run_crawl, run_scrapy, write_conf
from tests.helpers.redis_server import RedisCluster
from tests.helpers.shared import figure, finish, link_lines, start_worker
from tests.helpers.treesite import PAGES, tree_site

pytestmark = [pytest.mark.redis]


def serving(cluster: RedisCluster, crawl: str) -> int:
    """The index of the node whose slots hold crawl ``crawl``'s keys."""
    slot = key_slot(key_prefix(crawl).encode())
    client = cluster.nodes[0].client()
    try:
        for start, end, master, *_ in client.execute_command("CLUSTER SLOTS"):
            if start <= slot <= end:
                return [node.port for node in cluster.nodes].index(int(master[1]))
    finally:
        client.close()
    raise AssertionError(f"no node serves slot {slot}")


def test_a_client_of_any_node_talks_to_the_node_serving_the_crawl(redis_cluster: RedisCluster):
    crawl = "site-16511032"
    owner = serving(redis_cluster, crawl)
    for node in redis_cluster.nodes:
        client = connect(node.url, retry_forever=False, crawl=crawl)
        try:
            assert serving_node(client, crawl) == ("127.0.0.1", redis_cluster.nodes[owner].port)
            assert (
                client.connection_pool.connection_kwargs["port"] == redis_cluster.nodes[owner].port
            )
            client.set(key_prefix(crawl) + "probe", b"1")  # a node not serving the slot says MOVED
        finally:
            client.close()
    assert redis_cluster.keys_by_node("tarantula:*")[owner] == 1


@pytest.mark.e2e
def test_two_workers_crawl_through_a_node_that_does_not_serve_the_crawl(
    web, tmp_path, redis_cluster: RedisCluster
):
    urls = tree_site(web, delay=0.01)
    (tmp_path / "one").mkdir()
    alone = run_crawl(write_conf(tmp_path / "one", [urls[0]], threads=4, host_concurrency=4))
    assert alone.status == 0, alone.process.stdout
    web.requests.clear()
    folder = tmp_path / "two"
    folder.mkdir()
    conf = write_conf(folder, [urls[0]], threads=4, host_concurrency=8, log_level=1,
                      redis=redis_cluster.nodes[0].url)  # fmt: skip
    owner = serving(redis_cluster, crawl_id(load_config(conf)))
    named = (owner + 1) % len(redis_cluster.nodes)
    conf.write_text(
        conf.read_text().replace(redis_cluster.nodes[0].url, redis_cluster.nodes[named].url)
    )

    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))

    repository = folder / "repo"
    assert link_lines(repository / "index.txt") == link_lines(alone.repository / "index.txt")
    fetched = [r.target for r in web.requests if r.target != "/robots.txt"]
    assert len(fetched) == len(set(fetched)) == PAGES
    keys = redis_cluster.keys_by_node("tarantula:*")
    assert keys[owner] > 0 and sum(keys) == keys[owner], keys  # one slot: the serving node's
    report = (repository / "report.html").read_text(encoding="utf-8")
    assert figure(report, "documents") == str(PAGES)
    check = run_scrapy("verify", str(conf))
    assert (check.returncode, check.stdout) == (0, ""), check.stdout + check.stderr
