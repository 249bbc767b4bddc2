"""What a crawl in one process met, read back from its database without changing it (see
:mod:`tarantula.store`): the documents of the repository, what became of one URL, and the
figures of the crawl report (:func:`read_state`)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from tarantula.core.config import CrawlConfig
from tarantula.core.documents import StoredDocument
from tarantula.core.facts import Met
from tarantula.core.frontier import LEASED, QUEUED, host_of, url_hash
from tarantula.core.index import UNKNOWN
from tarantula.core.report import (
    FAILED_LISTED,
    KEPT,
    NEAR_LISTED,
    SET_ASIDE,
    RunRow,
    SeedRow,
    StateFigures,
    outcome_class,
    shown_entry,
)
from tarantula.core.requisites import MARK, Requisite
from tarantula.core.traps import rule_of
from tarantula.core.urls import UrlRejected, normalize_url
from tarantula.store.contract import StoreUnavailable
from tarantula.store.folder.met import met_row
from tarantula.store.sqlite import state_path
from tarantula.store.sqlite.documents import restored
from tarantula.store.sqlite.requisites import COLUMNS
from tarantula.store.sqlite.shared import connect_crawl
from tarantula.store.sqlite.traps import learned_rules


def url_facts(root: Path, url: str) -> Met | str:
    """What the crawl in repository ``root`` met for ``url``; a string when there is no crawl."""
    path = state_path(root)
    if not path.exists():
        return "has not run yet (no crawl state)"
    db = connect_crawl(path)
    try:
        row = db.execute(
            "SELECT u.state, u.outcome, u.done, u.depth, r.url FROM urls AS u"
            " LEFT JOIN urls AS r ON r.hash = u.referrer WHERE u.hash = ?",
            (url_hash(url),),
        ).fetchone()
        stored = db.execute("SELECT path FROM documents WHERE url = ?", (url,)).fetchone()
        copy = db.execute("SELECT original FROM duplicates WHERE url = ?", (url,)).fetchone()
        near = db.execute(
            "SELECT original, distance FROM near_duplicates WHERE url = ?"
            " AND generation = (SELECT max(generation) FROM runs)",
            (url,),
        ).fetchone()
        met = met_row(db, url) if row is None else None
        trap = None
        if met is not None and met.outcome == "trap-learned":
            trap = rule_of(url, learned_rules(db))
    except sqlite3.OperationalError as exc:  # a state of another version, or not a state at all
        return f"cannot be told: {path} cannot be read ({exc})"
    finally:
        db.close()
    if row is None:
        return (
            Met("never met")
            if met is None
            else Met("dropped", met.outcome, met.at, None, met.page, trap=trap)
        )
    state = {QUEUED: "queued", LEASED: "in flight"}.get(row[0], "done")
    return Met(state, row[1], row[2], row[3], row[4], stored and stored[0], copy and copy[0],
               near and (str(near[0]), int(near[1])))  # fmt: skip


def folder_documents(root: Path) -> list[StoredDocument] | str:
    """The stored documents of the crawl in repository ``root``, by path, their records cut to
    the record line; a string when there is no crawl there."""
    path = state_path(root)
    if not path.is_file():
        return f"{root}: no crawl state ({path} is missing)"
    db = connect_crawl(path)
    try:
        rows = db.execute(
            "SELECT url, path, md5, last_modified, etag,"
            " substr(record, 1, instr(record || char(10), char(10)) - 1)"
            " FROM documents ORDER BY path"
        )
        return [
            StoredDocument(url, path, md5, modified, etag, restored(url, line))
            for url, path, md5, modified, etag, line in rows
        ]
    finally:
        db.close()


def folder_duplicates(root: Path) -> list[tuple[str, str]]:
    """The URLs the crawl in repository ``root`` keeps as exact duplicates, each with its stored
    twin (URL, original), latest generation first; none when there is no crawl there."""
    path = state_path(root)
    if not path.is_file():
        return []
    db = connect_crawl(path)
    try:
        return db.execute(
            "SELECT url, original FROM duplicates ORDER BY generation DESC, rowid"
        ).fetchall()
    finally:
        db.close()


def url_requisite(root: Path, url: str) -> Requisite | None:
    """The page requisite of ``url`` the crawl in repository ``root`` wanted, if any."""
    found = _requisites(root, "WHERE url = ?", (url,))
    return found[0] if found else None


def folder_requisites(root: Path) -> list[Requisite]:
    """The page requisites the crawl in repository ``root`` has copies of, by path; none when
    there is no crawl there (or one made before requisites were kept)."""
    return _requisites(root, "WHERE path IS NOT NULL ORDER BY path")


def _requisites(root: Path, where: str, parameters: tuple[str, ...] = ()) -> list[Requisite]:
    """The requisites of the crawl in repository ``root`` that the SQL ``where`` selects, read
    only; none when there is no crawl there."""
    path = state_path(root)
    if not path.is_file():
        return []
    db = connect_crawl(path)
    try:
        # A state made before a column was added (a crawl adds it when it opens the state).
        have = {row[1] for row in db.execute("PRAGMA table_info(requisites)")}
        columns = ", ".join(c if c in have else "NULL" for c in COLUMNS.split(", "))
        rows = db.execute(f"SELECT {columns} FROM requisites {where}", parameters)
        return [Requisite(*row) for row in rows]
    except sqlite3.OperationalError:  # no such table: a state made before requisites were kept
        return []
    finally:
        db.close()


def _frontier_outcome(state: int, outcome: str | None) -> str:
    if state == QUEUED:
        return "queued"
    if state == LEASED:
        return "in flight"
    return outcome or "done"


def _record_type(record: str) -> str:
    """The ``type`` field of an index record (the sixth of its first line)."""
    fields = record.partition("\n")[0].split("\t")
    return fields[5] if len(fields) == 8 else UNKNOWN


def read_state(path: Path, config: CrawlConfig | None = None) -> StateFigures:
    """The figures of the crawl state at ``path`` (empty when there is none), read only.

    It reads every document's record and every URL of the crawl once: seconds per hundred
    thousand documents."""
    if not path.exists():
        return StateFigures()
    # Not opened with mode=ro: a read-only connection cannot remove the WAL files when it closes,
    # and would leave them beside a state that the crawl closed cleanly.
    db = connect_crawl(path, read_only=False)
    try:
        db.execute("PRAGMA query_only = ON")
        runs = tuple(
            RunRow(*row)
            for row in db.execute(
                "SELECT id, kind, generation, started, ended, reason FROM runs ORDER BY id"
            )
        )
        generation = runs[-1].generation if runs else 0
        types: Counter[str] = Counter()
        pages: Counter[str] = Counter()
        for url, first_line in db.execute(
            "SELECT url, substr(record, 1, instr(record || char(10), char(10))) FROM documents"
        ):
            types[_record_type(first_line)] += 1
            pages[host_of(url)] += 1
        hosts: Counter[tuple[str, str]] = Counter()
        outcomes: Counter[str] = Counter()
        depths: Counter[tuple[int, str]] = Counter()
        for host, depth, state, outcome, count in db.execute(
            "SELECT host, depth, state, outcome, count(*) FROM urls WHERE generation = ?"
            f" AND url NOT LIKE '%{MARK}' GROUP BY host, depth, state, outcome",
            (generation,),
        ):
            kind = outcome_class(state, outcome)
            hosts[host, kind] += count
            depths[depth, kind] += count
            outcomes[_frontier_outcome(state, outcome)] += count
        duplicates = db.execute(
            "SELECT count(*) FROM duplicates WHERE generation = ?", (generation,)
        ).fetchone()[0]
        top = tuple(
            db.execute(
                "SELECT original, count(*) FROM duplicates WHERE generation = ?"
                " GROUP BY original ORDER BY count(*) DESC, original LIMIT 10",
                (generation,),
            )
        )
        seeds = tuple(
            _seed_row(db, seed, config) for seed in (config.starting_points if config else ())
        )
        try:
            near_count = db.execute(
                "SELECT count(*) FROM near_duplicates WHERE generation = ?", (generation,)
            ).fetchone()[0]
            near = tuple(
                db.execute(
                    "SELECT url, original, distance FROM near_duplicates WHERE generation = ?"
                    " ORDER BY rowid LIMIT ?",
                    (generation, NEAR_LISTED),
                )
            )
            traps = tuple(learned_rules(db).items())
        except sqlite3.OperationalError:  # a state made before near-duplicates were looked for
            near_count, near, traps = 0, (), ()
        try:
            requisites = db.execute(
                "SELECT count(*) FROM requisites WHERE path IS NOT NULL"
            ).fetchone()[0]
        except sqlite3.OperationalError:  # a state made before requisites were kept
            requisites = 0
        not_failed = sorted(KEPT | SET_ASIDE)
        failed_requisites = {
            (host, outcome): count
            for host, outcome, count in db.execute(
                "SELECT host, outcome, count(*) FROM urls WHERE generation = ? AND state = 2"
                f" AND url LIKE '%{MARK}' AND outcome NOT IN ({', '.join('?' * len(not_failed))})"
                " GROUP BY host, outcome",
                (generation, *not_failed),
            )
        }
        failed = tuple(
            (shown_entry(url), outcome, referrer)
            for url, outcome, referrer in db.execute(
                "SELECT u.url, u.outcome, r.url FROM urls AS u LEFT JOIN urls AS r"
                " ON r.hash = u.referrer WHERE u.generation = ? AND u.state = 2"
                f" AND u.outcome NOT IN ({', '.join('?' * len(not_failed))})"
                " ORDER BY u.done LIMIT ?",
                (generation, *not_failed, FAILED_LISTED),
            )
        )
    finally:
        db.close()
    return StateFigures(runs, generation, sum(types.values()), dict(types), dict(pages),
                        dict(hosts), dict(outcomes), dict(depths), duplicates, top, seeds,
                        failed, requisites, failed_requisites, near_count, near, traps)  # fmt: skip


def _seed_row(db: sqlite3.Connection, seed: str, config: CrawlConfig | None) -> SeedRow:
    try:
        url = normalize_url(seed, sort_query=bool(config and config.sort_query))
    except UrlRejected:
        return SeedRow(seed, None, None)
    row = db.execute("SELECT state, outcome FROM urls WHERE hash = ?", (url_hash(url),)).fetchone()
    return SeedRow(seed, url, _frontier_outcome(*row) if row else None)


def state_figures(config: CrawlConfig) -> StateFigures:
    """:func:`read_state` of ``config``'s repository; a database that cannot be read is
    :class:`~tarantula.store.StoreUnavailable`."""
    try:
        return read_state(state_path(config.repository), config)
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot read {state_path(config.repository)}: {exc}") from None
