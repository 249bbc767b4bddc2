"""``scrapy merge CONF FOLDER...`` and ``scrapy verify CONF`` on the folders of a crawl shared
through a real Redis (SPEC 9, 11): records and copies made by the document store (the merge's own
steps, a failure at a time), then workers with folders of their own crawling the recording
server and merged into one repository, and the command's errors."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest

from tarantula.commands.verify import verify
from tarantula.core.config import CrawlConfig, load_config
from tarantula.core.documents import StoredDocument
from tarantula.core.index import parse_index
from tarantula.core.layout import OWN_NAMES, folder_id_of
from tarantula.demo.server import RequestRecord, Resource
from tarantula.store import Merged
from tarantula.store.redis.documents import RedisDocumentStore, register_writer
from tarantula.store.redis.merge import MergeError, folder_ids, merge, open_crawl
from tarantula.store.redis.runs import RedisRunLog, Workers
from tarantula.store.redis.shared import crawl_id, key_prefix
from tests.helpers.crawls import run_crawl, run_scrapy, wait_for, write_conf
from tests.helpers.redis_server import RedisServer, free_port
from tests.helpers.shared import (
    browse_files,
    figure,
    finish,
    link_lines,
    shared_conf,
    start_worker,
)
from tests.helpers.treesite import PAGES, assert_whole, tree_body, tree_site

pytestmark = pytest.mark.redis

SEED = "http://h.test/"


def conf_in(folder: Path, redis: RedisServer) -> CrawlConfig:
    """The configuration of a shared crawl of :data:`SEED`, its repository ``folder/repo``."""
    folder.mkdir(parents=True, exist_ok=True)
    return load_config(write_conf(folder, [SEED], redis=redis.url))


def prefix_of(config: CrawlConfig) -> str:
    return key_prefix(crawl_id(config))


def ended_run(client, config: CrawlConfig) -> None:
    """A run of the crawl, ended: the crawl is in Redis and no worker is live."""
    runs = RedisRunLog(client, prefix_of(config), Workers(client, prefix_of(config), "w"))
    runs.begin()
    runs.end("finished")


def store_in(client, config: CrawlConfig, root: Path, names: list[str]) -> list[StoredDocument]:
    """Documents stored by a worker of folder ``root``: copies written there, records in its
    record file there, their essentials in Redis."""
    prefix, folder = prefix_of(config), folder_id_of(root)
    records = register_writer(client, prefix, root, "w", folder)
    documents = RedisDocumentStore(client, prefix, folder, records=records)
    documents.generation = 1
    stored = []
    for name in names:
        body = f"<title>{name}</title>".encode()
        doc = StoredDocument(
            f"{SEED}{name}", f"h.test/{name}.html", hashlib.md5(body).hexdigest(), None, None,
            f"h{name}\t{SEED}{name}\t{SEED}{name}\t{name}\tutf-8\thtml\t-\t-\n",
        )  # fmt: skip
        (root / doc.path).parent.mkdir(parents=True, exist_ok=True)
        (root / doc.path).write_bytes(body)
        documents.store(doc)
        stored.append(doc)
    return stored


def merged_into(client, config: CrawlConfig, *roots: Path) -> tuple[list[str], Merged]:
    merged = Merged()
    problems = list(merge(client, prefix_of(config), config.repository, folder_ids(list(roots)),
                          merged, chunk=2))  # fmt: skip
    return problems, merged


def mirror_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] not in OWN_NAMES
    }


# -- the steps, on records made by the document store ---------------------------------------------


def test_a_folder_merges_into_another_and_a_missing_copy_stays_behind(
    redis_server, redis_client, tmp_path
):
    config = conf_in(tmp_path, redis_server)
    ended_run(redis_client, config)
    a, b = config.repository, tmp_path / "b"
    docs = []
    for i in range(6):  # interleaved
        docs += store_in(redis_client, config, a if i % 2 == 0 else b, [str(i)])
    finder = RedisDocumentStore(redis_client, prefix_of(config), folder_id_of(b))
    finder.generation = 1
    finder.add_duplicate(f"{SEED}copy", docs[1].url)
    (b / docs[3].path).unlink()
    b_files = mirror_files(b)

    problems, merged = merged_into(redis_client, config, a, b)

    assert problems == [f"{b / docs[3].path}: missing (stored for {docs[3].url}); not merged"]
    index = (a / "index.txt").read_text(encoding="utf-8")
    # The repository's records, then the merged ones (one line each here).
    assert sorted(index.splitlines(keepends=True)) == [d.record for d in docs if d is not docs[3]]
    assert (a / "duplicates.tsv").read_text(encoding="utf-8") == f"{SEED}copy\t{docs[1].url}\n"
    assert (merged.folders, merged.documents, merged.moved) == (2, 5, 2)
    assert (merged.linked, merged.copied, merged.failed) == (2, 0, 1)
    assert os.path.samefile(a / docs[1].path, b / docs[1].path)  # a hard link
    assert mirror_files(b) == b_files, "the folder merged from is never changed"
    assert list(verify(config)) == []
    left = RedisDocumentStore(redis_client, prefix_of(config), folder_id_of(b), root=b)
    assert [d.url for d in left.documents()] == [docs[3].url]

    # Merging again changes nothing; once the copy is back, the last record comes too.
    problems, again = merged_into(redis_client, config, a, b)
    assert len(problems) == 1 and (again.moved, again.linked) == (0, 0)
    assert (a / "index.txt").read_text(encoding="utf-8") == index
    (b / docs[3].path).write_bytes(b"<title>3</title>")
    problems, last = merged_into(redis_client, config, a, b)
    assert (problems, last.moved, last.documents) == ([], 1, 6)
    index = (a / "index.txt").read_text(encoding="utf-8")
    assert sorted(index.splitlines(keepends=True)) == [d.record for d in docs]


def test_across_file_systems_files_are_copied_and_stale_ones_replaced(
    redis_server, redis_client, tmp_path, monkeypatch
):
    config = conf_in(tmp_path, redis_server)
    ended_run(redis_client, config)
    part = tmp_path / "part"
    docs = store_in(redis_client, config, part, ["0", "1", "2"])
    target = config.repository
    (target / "h.test").mkdir(parents=True)
    (target / docs[0].path).write_bytes(b"an older copy")
    (target / docs[1].path).write_bytes((part / docs[1].path).read_bytes())  # the same content

    def no_links(source: object, target: object) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    folder_id_of(target)  # made with a link, before they fail
    monkeypatch.setattr(os, "link", no_links)
    problems, merged = merged_into(redis_client, config, part)

    assert problems == [] and (merged.copied, merged.linked, merged.moved) == (2, 0, 3)
    assert mirror_files(target) == mirror_files(part)
    assert not os.path.samefile(target / docs[0].path, part / docs[0].path)
    assert [p.name for p in (target / "h.test").iterdir() if p.name.startswith(".")] == []
    assert list(verify(config)) == []


def test_warc_files_and_captures_merge_without_clashes(redis_server, redis_client, tmp_path):
    pytest.importorskip("warcio")
    from tarantula.core.warc import Captures

    config = conf_in(tmp_path, redis_server)
    ended_run(redis_client, config)
    a, b = config.repository, tmp_path / "b"
    folder_id_of(a)
    b_id = folder_id_of(b)
    name = "tarantula-20260101000000-00000.warc.gz"
    for root, content in ((a, b"A"), (b, b"B")):
        (root / "warc").mkdir(parents=True)
        (root / "warc" / name).write_bytes(content)
    (b / "warc" / "tarantula-20260101000000-00001.warc.gz").write_bytes(b"B1")
    (a / ".tarantula" / "warc-captures.tsv").write_text(
        f"{SEED}1\t2026-01-01T00:00:00Z\t<urn:a1>\tsha1:A\n", encoding="utf-8"
    )
    (b / ".tarantula" / "warc-captures.tsv").write_text(
        f"{SEED}1\t2026-02-01T00:00:00Z\t<urn:b1>\tsha1:B\n{SEED}2\t2026-01-01T00:00:00Z\t"
        f"<urn:b2>\tsha1:B\n{SEED}3\t2026-01-01",  # the last line cut by a kill
        encoding="utf-8",
    )

    problems, merged = merged_into(redis_client, config, a, b)

    assert problems == [] and merged.warc_files == 2
    assert {p.name: p.read_bytes() for p in (a / "warc").iterdir()} == {
        name: b"A",
        f"tarantula-20260101000000-00000-{b_id}.warc.gz": b"B",
        "tarantula-20260101000000-00001.warc.gz": b"B1",
    }
    captures = a / ".tarantula" / "warc-captures.tsv"
    text = captures.read_text(encoding="utf-8")
    found = Captures(captures)
    assert [found.find(f"{SEED}{i}").record_id for i in (1, 2)] == ["<urn:b1>", "<urn:b2>"]
    assert found.find(f"{SEED}3") is None
    _, again = merged_into(redis_client, config, a, b)
    assert again.warc_files == 0 and len(list((a / "warc").iterdir())) == 3
    assert captures.read_text(encoding="utf-8") == text


def test_folders_are_checked_before_anything_changes(redis_server, redis_client, tmp_path):
    config = conf_in(tmp_path, redis_server)
    part = tmp_path / "part"
    folder_id_of(part)
    with pytest.raises(MergeError, match="no such folder"):
        folder_ids([part, tmp_path / "nowhere"])
    (tmp_path / "plain").mkdir()
    with pytest.raises(
        MergeError, match=r"not a repository folder of a shared crawl \(.*folder-id"
    ):
        folder_ids([tmp_path / "plain"])
    assert folder_ids([part, part]) == [(part, folder_id_of(part))]  # once
    assert not config.repository.exists()


def test_no_merge_without_the_crawl_in_redis_or_while_workers_are_at_work(redis_server, tmp_path):
    config = conf_in(tmp_path, redis_server)
    with pytest.raises(MergeError, match=f"holds no crawl {crawl_id(config)}"):
        open_crawl(config)
    client = redis_server.client()
    RedisRunLog(client, prefix_of(config), Workers(client, prefix_of(config), "w1")).begin()
    with pytest.raises(MergeError, match=r"workers are at work on the crawl \(w1\)"):
        open_crawl(config)
    client.close()


# -- the commands ---------------------------------------------------------------------------------


def test_merge_errors_exit_2_and_change_nothing(tmp_path):
    part = tmp_path / "part"
    folder_id_of(part)
    alone = write_conf(tmp_path, [SEED])
    check = run_scrapy("merge", str(alone), str(part))
    assert check.returncode == 2
    assert check.stderr.strip().endswith(
        f"{alone}: error: no <distributed-options> redis: merge combines the folders of a crawl "
        "shared through Redis"
    )
    url = f"redis://127.0.0.1:{free_port()}/0"
    (tmp_path / "shared").mkdir()
    shared = write_conf(tmp_path / "shared", [SEED], redis=url)
    check = run_scrapy("merge", str(shared), str(part), str(tmp_path / "nowhere"))
    assert (check.returncode, check.stdout) == (2, "")
    assert f"{shared}: error: {tmp_path / 'nowhere'}: no such folder" in check.stderr
    check = run_scrapy("merge", str(shared), str(part))
    assert check.returncode == 2
    assert f"{shared}: error: cannot reach Redis at {url}: " in check.stderr
    assert "Traceback" not in check.stderr
    check = run_scrapy("verify", str(shared))
    assert check.returncode == 2
    assert f"{shared}: error: cannot reach Redis at {url}: " in check.stderr
    assert not (tmp_path / "shared" / "repo").exists()


def test_a_bad_configuration_exits_2(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("<crawler-options>\nstarting-points = ;\n")
    check = run_scrapy("merge", str(conf), str(tmp_path))
    assert check.returncode == 2
    assert f"{conf}:2:" in check.stderr and "error" in check.stderr


# -- end to end -----------------------------------------------------------------------------------


@pytest.mark.e2e
def test_folders_of_their_own_merge_into_what_one_process_builds(web, tmp_path, redis_server):
    pytest.importorskip("warcio")
    urls = tree_site(web, delay=0.05)
    (tmp_path / "one").mkdir()
    alone = run_crawl(
        write_conf(tmp_path / "one", [urls[0]], threads=4, host_concurrency=4, browsable=True)
    )
    assert alone.status == 0, alone.process.stdout
    # The same configuration file on two machines: its repository is a folder of each one's.
    # The host has a slot for each thread of both workers: neither can keep the other out.
    names = ("m1", "m2", "merged")
    confs = [
        shared_conf(
            tmp_path / name, urls[0], redis_server, warc=True, host_concurrency=8, browsable=True
        )
        for name in names
    ]
    assert len({conf.read_text() for conf in confs}) == 1
    # The first page waits for both workers: each then takes a part, however slowly one starts.
    workers = Workers(redis_server.client(), prefix_of(load_config(confs[0])), "")

    def first_page(record: RequestRecord) -> Resource:
        wait_for(lambda: {"w1", "w2"} <= set(workers.live()), timeout=60)
        return Resource(tree_body(0), headers={"Content-Type": "text/html"})

    web.add("a.test", "/p0.html", first_page)
    finish(start_worker(confs[0], "w1"), start_worker(confs[1], "w2"))
    workers.client.close()
    parts = [tmp_path / name / "repo" for name in names[:2]]
    shares = [len(list(parse_index((p / "index.txt").read_text("utf-8")))) for p in parts]
    assert sum(shares) == PAGES and min(shares) > 0, shares
    for conf, share in zip(confs[:2], shares, strict=True):  # each part whole, browse/ too
        check = run_scrapy("verify", str(conf))
        assert (check.returncode, check.stdout) == (0, ""), check.stdout
        assert f"{share} browse files" in check.stderr
    before = [mirror_files(p) for p in parts]

    result = run_scrapy("merge", str(confs[2]), *map(str, parts))

    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    assert f"2 folders, {PAGES} documents ({PAGES} merged now), {PAGES} files copied" in (
        result.stderr
    )
    target = tmp_path / "merged" / "repo"
    assert link_lines(target / "index.txt") == link_lines(alone.repository / "index.txt")
    assert_whole(web, target)  # every copy whole, with the right bytes
    assert sorted(mirror_files(target)) == alone.files()
    assert [mirror_files(p) for p in parts] == before, "the folders merged from are unchanged"
    for conf, share in zip(confs[:2], shares, strict=True):  # checked against what they held
        check = run_scrapy("verify", str(conf))
        assert (check.returncode, check.stdout) == (0, ""), check.stdout
        assert f"{share} documents, {share} files, {share} browse files" in check.stderr
    warc = sorted(p.name for p in (target / "warc").iterdir())
    assert len(warc) == sum(len(list((p / "warc").iterdir())) for p in parts)
    check = run_scrapy("verify", str(confs[2]))
    assert (check.returncode, check.stdout) == (0, ""), check.stdout
    assert f"{PAGES} documents, {PAGES} files, {PAGES} browse files" in check.stderr
    assert f"{len(warc)} WARC file{'s' if len(warc) != 1 else ''}" in check.stderr
    # The merged repository's browse/ and report are the one process's.
    assert browse_files(target) == browse_files(alone.repository)
    report = (target / "report.html").read_text(encoding="utf-8")
    alone_report = (alone.repository / "report.html").read_text(encoding="utf-8")
    for key in ("documents", "fetched"):
        assert figure(report, key) == figure(alone_report, key) == str(PAGES), key

    index = (target / "index.txt").read_text("utf-8")
    again = run_scrapy("merge", str(confs[2]), *map(str, parts))
    assert again.returncode == 0 and "(0 merged now), 0 files copied" in again.stderr
    assert (target / "index.txt").read_text("utf-8") == index

    gone = next(r for r in parse_index(index) if r.url.endswith("/p7.html"))
    path = f"a.test:{web.port}/p7.html"
    (target / path).unlink()
    check = run_scrapy("verify", str(confs[2]))
    assert check.returncode == 1
    assert check.stdout == f"{path}: missing (stored for {gone.url})\n"
