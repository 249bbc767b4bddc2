"""What a crawl shared through Redis met, read from Redis without changing it (see
:mod:`tarantula.store`): a folder's documents, what became of one URL, and the report's figures.

Redis keeps the frontier, the stored documents, the duplicates, the runs and a count of every
outcome, but no outcome of a single URL (a done URL's record is deleted, its hash stays in the
seen-set): the report of a shared crawl has its documents, types, hosts' documents, duplicates,
runs and outcomes by kind from Redis, and the per-URL figures (depths, hosts' failures, failed
URLs, seeds' outcomes) from what the workers of the configured folder handled, which their record
files keep (:mod:`tarantula.store.folder.met`), with no referrer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from tarantula.core.documents import StoredDocument
from tarantula.core.facts import Met
from tarantula.core.frontier import DONE, host_of
from tarantula.core.index import UNKNOWN, parse_index
from tarantula.core.layout import FOLDER_ID_NAME, INDEX_NAME, STATE_FOLDER, read_folder_id
from tarantula.core.report import (
    FAILED_LISTED,
    NEAR_LISTED,
    RunRow,
    SeedRow,
    StateFigures,
    outcome_class,
    shown_entry,
)
from tarantula.core.requisites import Requisite, requisite_url
from tarantula.core.traps import rule_of
from tarantula.core.urls import UrlRejected, normalize_url
from tarantula.store.folder.met import MetRow
from tarantula.store.redis.essentials import Essentials
from tarantula.store.redis.records import folder_files
from tarantula.store.redis.shared import RedisUnreachable, crawl_id, read_crawl

T = TypeVar("T")

if TYPE_CHECKING:
    from redis import Redis

    from tarantula.core.config import CrawlConfig
    from tarantula.store.redis.documents import RedisDocumentStore


def folder_documents(config: CrawlConfig, root: Path) -> list[StoredDocument] | str:
    """The stored documents of repository folder ``root`` in ``config``'s crawl (the records of
    its folder id), by path, their records cut to the record line, read without writing; a string
    when the folder has no folder id (or an empty one). :class:`RedisUnreachable` when Redis does
    not answer."""
    from redis import RedisError

    from tarantula.store.redis.documents import MERGED_INTO, RedisDocumentStore

    client, prefix = read_crawl(config)  # first: an unreachable Redis is told
    try:
        try:
            folder_id = read_folder_id(root)
        except ValueError as exc:  # an empty folder-id file
            return f"{root}: {exc}"
        if folder_id is None:
            path = root / STATE_FOLDER / FOLDER_ID_NAME
            return f"{root}: not a repository folder of the shared crawl ({path} is missing)"
        store = RedisDocumentStore(client, prefix, folder_id, root=root)
        into = cast("bytes | None", client.hget(prefix + MERGED_INTO, folder_id))
        # Merged since: its records are the merged folder's now.
        found = (
            list(store.documents(links=False))
            if into is None
            else merged_documents(store, into.decode(), root)
        )
        found.sort(key=lambda doc: doc.path)
    except RedisError as exc:
        raise RedisUnreachable(f"cannot reach Redis at {config.redis}: {exc}") from None
    finally:
        client.close()
    return [replace(doc, record=doc.record.partition("\n")[0]) for doc in found]


def folder_duplicates(config: CrawlConfig, root: Path) -> list[tuple[str, str]]:
    """The URLs repository folder ``root`` keeps as exact duplicates in ``config``'s crawl, each
    with its twin (URL, original); none when the folder has no folder id.
    :class:`RedisUnreachable` when Redis does not answer."""
    from tarantula.store.redis.documents import RedisDocumentStore

    def read(client: Redis, prefix: str, folder_id: str) -> list[tuple[str, str]]:
        return list(RedisDocumentStore(client, prefix, folder_id).duplicates(every=True))

    return _of_folder(config, root, read) or []


def folder_requisites(config: CrawlConfig, root: Path, *, others: bool = False) -> list[Requisite]:
    """The page requisites ``config``'s crawl has copies of in repository folder ``root`` (with
    ``others``: in its other folders), by path; none when the folder has no folder id.
    :class:`RedisUnreachable` when Redis does not answer."""
    from tarantula.store.redis.requisites import RedisRequisites

    def read(client: Redis, prefix: str, folder_id: str) -> list[Requisite]:
        fetched = RedisRequisites(client, prefix, folder_id).fetched(others=others)
        return sorted(fetched, key=lambda req: req.path or "")

    return _of_folder(config, root, read) or []


def _of_folder(config: CrawlConfig, root: Path, read: Callable[[Redis, str, str], T]) -> T | None:
    """What ``read(client, prefix, folder id)`` finds for repository folder ``root`` in
    ``config``'s crawl; None when the folder has no folder id. :class:`RedisUnreachable` when
    Redis does not answer."""
    from redis import RedisError

    client, prefix = read_crawl(config)
    try:
        try:
            folder_id = read_folder_id(root)
        except ValueError:
            return None
        if folder_id is None:
            return None
        return read(client, prefix, folder_id)
    except RedisError as exc:
        raise RedisUnreachable(f"cannot reach Redis at {config.redis}: {exc}") from None
    finally:
        client.close()


def url_requisite(config: CrawlConfig, url: str) -> Requisite | None:
    """The page requisite of ``url`` ``config``'s crawl wanted, if any. :class:`RedisUnreachable`
    when Redis does not answer."""
    from redis import RedisError

    from tarantula.store.redis.requisites import RedisRequisites

    client, prefix = read_crawl(config)
    try:
        return RedisRequisites(client, prefix, "").requisite(url)
    except RedisError as exc:
        raise RedisUnreachable(f"cannot reach Redis at {config.redis}: {exc}") from None
    finally:
        client.close()


def merged_documents(store: RedisDocumentStore, into: str, root: Path) -> list[StoredDocument]:
    """The documents of folder ``root`` (``store``'s), its own or moved to folder id ``into`` by
    ``scrapy merge``, that its own ``index.txt`` lists: what it held, which the merge left as it
    was (a document recorded by two of its files is the last one's)."""
    try:
        text = (root / INDEX_NAME).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    held = {record.url for record in parse_index(text)}
    found = {doc.url: doc for doc in store.documents(moved_to=into, links=False) if doc.url in held}
    return list(found.values())


def url_facts(config: CrawlConfig, url: str) -> Met | str:
    """What a crawl shared through Redis met for ``url``: a stored document or a duplicate from
    Redis; anything else from what the workers of the configured repository folder met (their
    record files, :mod:`tarantula.store.folder.met`: Redis keeps no outcome of single URLs).
    :class:`RedisUnreachable` when Redis does not answer."""
    from redis import RedisError

    from tarantula.store.redis.codec import url_id
    from tarantula.store.redis.runs import _decode
    from tarantula.store.redis.traps import RedisTraps

    client, prefix = read_crawl(config)
    try:
        raw, duplicate = (
            client.hget(prefix + "docs", url_id(url)[0]),
            client.hget(prefix + "dups", url),
        )
        rules = RedisTraps(client, prefix).rules()
    except RedisError as exc:
        raise RedisUnreachable(f"cannot reach Redis at {config.redis}: {exc}") from None
    finally:
        client.close()
    listed = None if duplicate is None else _decode(cast("bytes", duplicate))
    near = None
    if listed is not None and listed.get("distance") is not None:
        near, listed = (str(listed["original"]), int(listed["distance"])), None
    if raw is not None:
        doc = Essentials.decode(cast("bytes", raw))
        return Met("done", "stored", None, doc.depth, None, doc.path, near_duplicate_of=near)
    if listed is not None:
        return Met("done", "duplicate", duplicate_of=listed["original"])
    if near is not None:
        return Met("done", "near-duplicate", near_duplicate_of=near)
    rows = []
    for records in folder_files(config.repository):
        try:
            if (row := records.met(url)) is not None:
                rows.append(row)
        finally:
            records.close()
    if not rows:
        return Met("never met")  # by the workers of this folder
    row = max(rows, key=lambda row: (row.generation, row.at))
    if row.page is not None:
        trap = None
        if row.outcome == "trap-learned":
            trap = rule_of(url, rules)
        return Met("dropped", row.outcome, row.at, None, row.page, trap=trap)
    return Met("done", row.outcome, row.at)


def state_figures(config: CrawlConfig) -> StateFigures:
    """The report's figures of ``config``'s crawl, from Redis (see the module's docstring), over
    every worker and folder. :class:`RedisUnreachable` when Redis does not answer."""
    from redis import RedisError

    from tarantula.store.redis.documents import stored_pages
    from tarantula.store.redis.runs import RedisRunLog, Workers
    from tarantula.store.redis.shards import shard_keys
    from tarantula.store.redis.traps import RedisTraps

    seeds: list[tuple[str, str | None]] = []  # as written, normalized
    for seed in config.starting_points:
        try:
            seeds.append((seed, normalize_url(seed)))
        except UrlRejected:
            seeds.append((seed, None))
    seed_urls = {url for _, url in seeds if url is not None}
    found: dict[str, str] = {}  # a seed's URL -> what became of it
    client, prefix = read_crawl(config)
    try:
        runs = RedisRunLog(client, prefix, Workers(client, prefix, "", 1.0)).history()
        generation = runs[-1].generation if runs else 0
        types: Counter[str] = Counter()
        pages: Counter[str] = Counter()
        depths: Counter[tuple[int, str]] = Counter()
        for page in stored_pages(client, prefix):
            for doc in map(Essentials.decode, page.values()):
                types[doc.type or UNKNOWN] += 1
                pages[host_of(doc.url)] += 1
                depths[doc.depth, "stored"] += 1
                if doc.url in seed_urls:
                    found[doc.url] = "stored"
        originals: Counter[str] = Counter()
        traps = RedisTraps(client, prefix).rules()
        near: list[tuple[int, str, str, int]] = []
        for url, data in _scan(client, prefix + "dups"):
            if data.get("generation") != generation:
                continue
            if data.get("distance") is not None:
                near.append((int(data["seq"]), url, data["original"], int(data["distance"])))
            else:
                originals[data["original"]] += 1
                if url in seed_urls:
                    found.setdefault(url, "duplicate")
        outcomes: Counter[str] = Counter()
        # The frontier's shards (one on a server on its own): their outcomes.
        for node, shard in shard_keys(client, crawl_id(config)):
            raw = cast("dict[bytes, bytes]", node.hgetall(shard + "outcome"))
            outcomes.update({key.decode(): int(value) for key, value in raw.items()})
            if node is not client:
                node.close()
        requisites = outcomes.pop("requisite", 0)  # page requisites kept: not documents' URLs
    except RedisError as exc:
        raise RedisUnreachable(f"cannot reach Redis at {config.redis}: {exc}") from None
    finally:
        client.close()
    handled = _handled(config.repository, generation)
    hosts: Counter[tuple[str, str]] = Counter((host, "stored") for host in pages.elements())
    failed: list[tuple[str, str, str | None]] = []
    failed_requisites: Counter[tuple[str, str]] = Counter()
    for row in handled:
        kind = outcome_class(DONE, row.outcome)
        if row.url in seed_urls:
            found.setdefault(row.url, row.outcome)
        if (requisite := requisite_url(row.url)) is not None:
            if kind == "failed":
                failed_requisites[host_of(requisite), row.outcome] += 1
        else:
            hosts[host_of(row.url), kind] += 1
            if row.depth is not None:
                depths[row.depth, kind] += 1
        if kind == "failed" and len(failed) < FAILED_LISTED:
            # A shared crawl keeps no referrer: a seed's is None, any other's unknown ("-").
            failed.append((shown_entry(row.url), row.outcome, None if row.depth == 0 else "-"))
    # Redis counts every URL's outcome, page requisites' too: these are counted apart.
    for (_, kind), count in failed_requisites.items():
        outcomes[kind] -= min(count, outcomes[kind])
    return StateFigures(
        runs=tuple(RunRow(r.id, r.kind, r.generation, r.started, r.ended, r.reason) for r in runs),
        generation=generation,
        documents=sum(types.values()),
        types=dict(types),
        pages=dict(pages),
        outcomes={kind: count for kind, count in outcomes.items() if count},
        duplicates=sum(originals.values()),
        top_duplicates=tuple(sorted(originals.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
        requisites=requisites,
        hosts=dict(hosts),
        depths=dict(depths),
        seeds=tuple(SeedRow(seed, url, found.get(url) if url else None) for seed, url in seeds),
        failed=tuple(failed),
        failed_requisites=dict(failed_requisites),
        near_duplicates=len(near),
        near_listed=tuple(row[1:] for row in sorted(near)[:NEAR_LISTED]),
        traps=tuple(traps.items()),
    )


def _handled(root: Path, generation: int) -> list[MetRow]:
    """What the workers of folder ``root`` handled without a document in ``generation`` (their
    record files): a shared crawl's per-URL outcomes, which Redis does not keep."""
    rows = []
    for records in folder_files(root):
        try:
            rows += records.handled(generation)
        finally:
            records.close()
    return rows


def _scan(client: Any, key: str, chunk: int = 1000) -> Any:
    """The entries of hash ``key``, decoded: (URL, JSON value), ``chunk`` at a time."""
    from tarantula.store.redis.runs import _decode

    cursor = 0
    while True:
        cursor, page = client.hscan(key, cursor, count=chunk)
        for name, raw in page.items():
            yield name.decode(), _decode(raw)
        if cursor == 0:
            return
