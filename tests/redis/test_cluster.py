"""A crawl shared through a real Redis Cluster of three nodes (SPEC 9): the configuration may name
any node; the crawl's own keys share one hash slot, and its frontier is spread over the nodes by
host, one shard a master (:mod:`tarantula.store.redis.shards`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from itertools import pairwise

import pytest
from redis.crc import key_slot

from tarantula.core.config import load_config
from tarantula.core.index import parse_index
from tarantula.demo.server import Handler, RequestRecord, Resource
from tarantula.store.redis.frontier import RedisFrontier
from tarantula.store.redis.runs import Workers
from tarantula.store.redis.shards import ShardedFrontier, open_frontier, shard_tags
from tarantula.store.redis.shared import connect, crawl_id, key_prefix, serving_node
from tarantula.store.redis.transport import Batch, send
from tests.helpers.crawls import run_crawl, run_scrapy, wait_for, write_conf
from tests.helpers.redis_server import RedisCluster, RedisServer
from tests.helpers.shared import figure, finish, link_lines, start_worker

# One cluster serves the module's tests (see conftest), on one worker of the parallel run.
pytestmark = [pytest.mark.redis, pytest.mark.xdist_group("redis-cluster")]


def serving(cluster: RedisCluster, crawl: str) -> int:
    """The index of the node whose slots hold the keys tagged ``crawl``."""
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


def test_a_worker_waits_while_the_cluster_is_down(redis_servers: Callable[..., RedisServer]):
    # A node of a cluster that serves no slot answers CLUSTERDOWN, as every node does while a
    # master is away, and as a restarted node does until it has rejoined.
    node = redis_servers(cluster=True)
    admin = node.client()
    # A master cut off from the cluster waits its node timeout (500 ms at least) before it serves
    # again: kept short here.
    admin.config_set("cluster-node-timeout", 500)
    worker = connect(node.url)  # a worker's client: waits for Redis, forever
    waits: list[logging.LogRecord] = []
    waited = threading.Condition()

    class Waits(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            with waited:
                waits.append(record)
                waited.notify_all()

    def serve_after_a_wait(before: int, seen: list[bool]) -> None:
        with waited:
            seen.append(waited.wait_for(lambda: len(waits) > before, timeout=60))
        admin.execute_command("CLUSTER ADDSLOTSRANGE", 0, 16383)

    handler = Waits(logging.WARNING)
    logging.getLogger("tarantula.store.redis.shared").addHandler(handler)
    try:
        batch = Batch()
        batch.hget("h", "f")
        for call, expected in (
            (lambda: worker.hset("h", "f", "v"), 1),  # a command on its own
            (lambda: send(worker, batch), [b"v"]),  # a batch, as the scripts go
        ):
            seen: list[bool] = []
            helper = threading.Thread(target=serve_after_a_wait, args=(len(waits), seen))
            helper.start()
            reply = call()
            helper.join()
            assert seen == [True]  # the call waited (and said so) until the cluster was up
            assert reply == expected
            admin.execute_command("CLUSTER DELSLOTSRANGE", 0, 16383)  # down again
    finally:
        logging.getLogger("tarantula.store.redis.shared").removeHandler(handler)
        worker.close()
        admin.close()
    assert "does not answer" in waits[0].getMessage()


def test_a_crawl_on_a_server_of_its_own_keeps_one_slot(redis_client):
    frontier = open_frontier(redis_client, "c", delay=0.0)
    assert isinstance(frontier, RedisFrontier) and frontier.prefix == key_prefix("c")
    assert shard_tags(redis_client, "c") == ["c"]


def test_a_clusters_shards_keep_the_frontier_contract(redis_cluster: RedisCluster):
    """Two workers' frontiers over the three masters: each host's URLs on its shard's node, a
    lease from every shard in turn, the crawl active until the last ack, and a URL pushed and
    done between two looks at idle shards is seen (the end of a crawl)."""
    crawl = "spread"
    clients = [connect(node.url, retry_forever=False, crawl=crawl) for node in redis_cluster.nodes]
    one = open_frontier(clients[0], crawl, delay=0.0, worker="a")
    two = open_frontier(clients[1], crawl, delay=0.0, worker="b")
    assert isinstance(one, ShardedFrontier) and isinstance(two, ShardedFrontier)
    # Each shard's seen-set is sized for its third of a million URLs; the crawl's own slot's path
    # buckets for every stored document.
    assert {shard.buckets for shard in one.shards} == {2048} and one.buckets == two.buckets == 4096
    hosts = [f"h{i}.test" for i in range(12)]
    for host in hosts:
        assert one.push(f"http://{host}/", f"http://{host}/", 0)
    one.flush()
    for host in hosts:
        assert one.shard(host).client.hexists(one.shard(host).prefix + "next", host)
    assert len({one.shard(host).prefix for host in hosts}) == 3
    asked = [f"http://{h}/" for h in hosts[:3]] + ["http://new.test/"]
    assert two.seen_many(asked) == [True, True, True, False]
    assert one.pending() == len(hosts) and one.active()
    leased = [entry for f in (one, two) * 6 if (entry := f.lease()) is not None]
    assert sorted(e.host for e in leased) == sorted(hosts)
    assert (one.in_flight(), one.pending()) == (len(hosts), 0)
    for entry in leased[:-1]:
        one.ack(entry.url, "stored")
    assert one.active() and two.active()  # the last lease is out
    two.ack(leased[-1].url, "stored")
    assert not one.active()
    looked = one._activity()
    assert looked is not None
    two.push("http://h0.test/late", "http://h0.test/late", 1)
    late = two.lease()
    assert late is not None and late.url == "http://h0.test/late"
    two.ack(late.url, "stored")
    assert one._activity() not in (None, looked)  # idle again, but a URL came and went
    assert one.counts()["outcome/stored"] == len(hosts) + 1
    for client in clients:
        client.close()


HOSTS = [f"h{i}.test" for i in range(9)]
PER_HOST = 12  # pages a host, besides its root


def spread_web(web, delay: float = 0.01, ready: Callable[[], bool] | None = None) -> list[str]:
    """Nine hosts: each root links to its pages and to the next host's root, each page to the
    next two and to the same page of the next host; ``/same.html`` has one body on every host
    (content duplicates whose copies live in different shards). The roots are answered once
    ``ready()`` holds. Returns the roots (the seeds, so every host is in scope)."""
    html = {"Content-Type": "text/html"}
    for n, host in enumerate(HOSTS):
        other = web.url(HOSTS[(n + 1) % len(HOSTS)], "/")
        links = "".join(f'<a href="/p{i}.html">{i}</a>' for i in range(PER_HOST))
        root = f'<title>{host}</title>{links}<a href="{other}">next</a><a href="/same.html">s</a>'
        web.add(host, "/", gated(Resource(root.encode(), headers=html, delay=delay), ready))
        web.add(host, "/same.html", Resource(b"<title>same</title>", headers=html, delay=delay))
        for i in range(PER_HOST):
            across = web.url(HOSTS[(n + 1) % len(HOSTS)], f"/p{i}.html")
            body = (f'<title>{host} {i}</title><a href="/p{(i + 1) % PER_HOST}.html">a</a>'
                    f'<a href="/p{(i + 2) % PER_HOST}.html">b</a><a href="{across}">c</a>')  # fmt: skip
            web.add(host, f"/p{i}.html", Resource(body.encode(), headers=html, delay=delay))
    return [web.url(host, "/") for host in HOSTS]


def gated(resource: Resource, ready: Callable[[], bool] | None) -> Handler:
    if ready is None:
        return resource

    def answer(record: RequestRecord) -> Resource:
        wait_for(ready, timeout=120)
        return resource

    return answer


@pytest.mark.e2e
def test_two_workers_spread_one_crawl_over_the_clusters_nodes(
    web, tmp_path, redis_cluster: RedisCluster
):
    """Named by a node that does not serve the crawl's own slot, two workers crawl nine hosts:
    the frontier's shards, one a master, each hold their hosts' keys; the index equals a
    one-process crawl's, every page is fetched once, one copy of the shared content is stored,
    and each host's requests keep the delay across workers and nodes. A recrawl then fetches
    every page again and changes nothing."""
    seeds = spread_web(web)
    (tmp_path / "one").mkdir()
    alone = run_crawl(write_conf(tmp_path / "one", seeds, threads=4, host_concurrency=1))
    assert alone.status == 0, alone.process.stdout
    web.requests.clear()
    folder = tmp_path / "two"
    folder.mkdir()
    conf = write_conf(folder, seeds, threads=4, host_concurrency=1, delay=0.3, log_level=1,
                      period=0, redis=redis_cluster.nodes[0].url)  # fmt: skip
    crawl = crawl_id(load_config(conf))
    named = (serving(redis_cluster, crawl) + 1) % len(redis_cluster.nodes)
    conf.write_text(
        conf.read_text().replace(redis_cluster.nodes[0].url, redis_cluster.nodes[named].url)
    )
    home = connect(redis_cluster.nodes[0].url, retry_forever=False, crawl=crawl)
    workers = Workers(home, key_prefix(crawl), "")
    # Both workers take part in each run (with period 0 a worker starting after the other ended
    # would begin a recrawl of its own).
    spread_web(web, ready=lambda: {"w1", "w2"} <= set(workers.live()))

    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))

    repository = folder / "repo"
    shared, single = (link_lines(r / "index.txt") for r in (repository, alone.repository))
    # Which host's copy of the shared content is stored is the first stored's: any one of them.
    assert [u for u in shared if u.endswith("/same.html")] != []
    assert len([u for u in shared if u.endswith("/same.html")]) == 1
    assert {u: v for u, v in shared.items() if not u.endswith("/same.html")} == {
        u: v for u, v in single.items() if not u.endswith("/same.html")
    }
    fetched = [(r.host, r.target) for r in web.requests if r.target != "/robots.txt"]
    assert len(fetched) == len(set(fetched)) == len(HOSTS) * (PER_HOST + 2)
    by_host: dict[str, list[tuple[float, str, str]]] = {}
    for record in web.requests:
        by_host.setdefault(record.host, []).append((record.time, record.target, record.client))
    for times in by_host.values():
        times.sort()
    gaps = [(b[0] - a[0], a, b) for times in by_host.values() for a, b in pairwise(times)]
    # Arrival times are the kernel's, and a request's start counts from when its worker sent it:
    # every two requests to a host (robots.txt included, each worker's own) arrive the delay
    # apart, less 10 ms for converting the clocks, whichever workers and nodes they went through.
    assert min(gaps)[0] >= 0.3 - 0.01, min(gaps)
    tags = shard_tags(home, crawl, decide=False)
    assert len(tags) == 3 and len({serving(redis_cluster, tag) for tag in tags}) == 3, tags
    keys = redis_cluster.keys_by_node("tarantula:*")
    assert all(count > 10 for count in keys), keys  # every node holds a share of the hosts
    report = (repository / "report.html").read_text(encoding="utf-8")
    assert figure(report, "documents") == str(len(HOSTS) * (PER_HOST + 1) + 1)
    duplicates = (repository / "duplicates.tsv").read_text(encoding="utf-8").splitlines()
    assert len([line for line in duplicates if "/same.html" in line]) == len(HOSTS) - 1
    check = run_scrapy("verify", str(conf))
    assert (check.returncode, check.stdout) == (0, ""), check.stdout + check.stderr

    web.requests.clear()
    outputs = finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    home.close()
    assert any("Recrawl finished (finished)" in out for out in outputs), outputs
    again = [(r.host, r.target) for r in web.requests if r.target != "/robots.txt"]
    assert sorted(again) == sorted(fetched)
    assert link_lines(repository / "index.txt") == shared
    check = run_scrapy("verify", str(conf))
    assert (check.returncode, check.stdout) == (0, ""), check.stdout + check.stderr


@pytest.mark.e2e
def test_max_page_number_is_exact_across_the_clusters_nodes(
    web, tmp_path, redis_cluster: RedisCluster
):
    """Two workers with max-page-number 40 on the nine hosts: 40 documents, across shards."""
    seeds = [web.url(host, "/") for host in HOSTS]  # spread_web's roots
    conf = write_conf(tmp_path, seeds, threads=4, host_concurrency=2, max_page_number=40,
                      log_level=1, redis=redis_cluster.nodes[0].url)  # fmt: skip
    crawl = crawl_id(load_config(conf))
    workers = Workers(connect(redis_cluster.nodes[0].url, retry_forever=False, crawl=crawl),
                      key_prefix(crawl), "")  # fmt: skip
    # Both workers take part (on a loaded machine the second could start once the first had
    # completed the crawl, and find nothing to do but a recrawl).
    assert spread_web(web, delay=0.02, ready=lambda: {"w1", "w2"} <= set(workers.live())) == seeds
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    index = (tmp_path / "repo" / "index.txt").read_text(encoding="utf-8")
    assert len(list(parse_index(index))) == 40
    check = run_scrapy("verify", str(conf))
    assert (check.returncode, check.stdout) == (0, ""), check.stdout + check.stderr
