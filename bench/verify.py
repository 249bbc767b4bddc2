"""Times ``scrapy verify`` on a synthetic repository of many documents.

    python -m bench.verify --documents 200000            # build it, verify with and without browse/
    python -m bench.verify --documents 20000 --runs 3

The repository is the one a complete crawl of the benchmark web (:mod:`bench.generate`: the same
pages of 5-30 KB with 10-40 links, two PDFs per host, ``--hosts`` hosts on port 8080) would leave,
built without crawling, with the project's own code:

- every page and PDF goes to its mirror path (:func:`tarantula.core.mirror.mirror_relpath`) by
  :func:`tarantula.core.mirror.write_atomic`; robots.txt's ``/private/`` pages are left out, as a
  crawl never fetches them;
- its index record (:func:`tarantula.core.index.format_record`, the page's links normalized, those
  to ``/private/`` left out) is stored in the crawl state by
  :class:`tarantula.core.documents.DocumentStore`, in a run that
  :class:`tarantula.core.repository.Repository` begins and ends, committed every
  :data:`COMMIT_EVERY` documents, which appends the records to ``index.txt`` as a crawl does;
- ``browse/`` is written by :class:`tarantula.store.folder.BrowseMirror`, as when ``browsable`` is
  turned on after a crawl: every document converted once, all its link targets already stored.

Then ``scrapy verify`` runs on it ``--runs`` times with ``browsable = no`` and as many with
``browsable = yes``, alternating, each a child process measured as :mod:`bench.run` measures a
crawler: wall time, user+sys CPU of the process and of the processes that read ``browse/``, peak
RSS, and the CPU the rest of the machine used meanwhile. The files are in the page cache (they
were just written, as after a crawl). The report is printed and written to
``bench/results/verify-<timestamp>.md``.
"""

from __future__ import annotations

import argparse
import email.utils
import hashlib
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.generate import Preset, base_url, build, contents, host_name
from bench.measure import PROJECT, Measured, machine_lines, measure
from bench.results import RESULTS, write_report
from tarantula.core.documents import StoredDocument
from tarantula.core.index import IndexRecord, format_record
from tarantula.core.mirror import mirror_relpath, store_path, write_atomic
from tarantula.core.urls import normalize_url, url_md5
from tarantula.store.folder import BrowseMirror
from tarantula.store.sqlite import SqliteStore
from tarantula.store.sqlite.browse import DatabaseDocuments

PORT = 8080
PDFS_PER_HOST = 2
#: Documents stored between two commits of the state (a crawl commits every second, about as
#: many documents as it stores in that time: a few hundred).
COMMIT_EVERY = 500


@dataclass
class Built:
    documents: int
    mirror_bytes: int
    seconds: float  # wall time to build the mirror, the state and index.txt
    cpu: float
    browse_seconds: float  # wall time to write browse/ (0 when not built)
    browse_cpu: float


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def build_repository(root: Path, documents: int, hosts: int, seed: int, browsable: bool) -> Built:
    """Write the repository of a complete crawl of ``documents`` pages and PDFs into ``root``."""
    pages = documents - hosts * PDFS_PER_HOST
    if pages < hosts:
        raise ValueError(f"{documents} documents are too few for {hosts} hosts")
    started, cpu = time.perf_counter(), _cpu()
    nodes, rng, words = build(Preset(hosts, pages, PDFS_PER_HOST), seed)
    names = [host_name(h) for h in range(hosts)]
    urls = [normalize_url(base_url(names[n.host], PORT) + n.path) for n in nodes]
    date = email.utils.formatdate(usegmt=True)
    state = SqliteStore(root, "bfs")
    state.begin()
    store = state.documents
    stored = size = 0
    for node_id, (node, data) in enumerate(contents(nodes, rng, words, names, PORT)):
        if node.kind == "private":  # disallowed by robots.txt: never fetched
            continue
        url, host = urls[node_id], names[node.host]
        is_page = node.kind == "page"
        relpath = mirror_relpath(url, "html" if is_page else "pdf")
        write_atomic(store_path(root, relpath), data, sync=False)
        store.wrote_file()
        links = tuple(
            (urls[t], "Home" if t == node.host and t != 0 else nodes[t].title)
            for t in node.links
            if nodes[t].kind != "private"
        )
        record = IndexRecord(
            url_md5(url),
            url,
            base_url(host, PORT) + node.path,
            f"{node.title} | {host}" if is_page else node.title,
            "utf-8" if is_page else None,
            "html" if is_page else "pdf",
            None,
            date,
            links,
        )
        md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
        store.store(StoredDocument(url, relpath.as_posix(), md5, None, None, format_record(record)))
        stored += 1
        size += len(data)
        if stored % COMMIT_EVERY == 0:
            state.commit()
        if stored % 20_000 == 0:
            print(f"  {stored} documents", flush=True)
    state.commit()
    built = Built(stored, size, time.perf_counter() - started, _cpu() - cpu, 0.0, 0.0)
    if browsable:
        started, cpu = time.perf_counter(), _cpu()
        browse = BrowseMirror(state.db, root, normalize_url, documents=DatabaseDocuments(state.db))
        browse.open()  # no browse/ yet: every stored document is converted
        browse.close()
        state.commit()  # the files are written once the state that lists them is committed
        built.browse_seconds, built.browse_cpu = time.perf_counter() - started, _cpu() - cpu
    state.end("finished")
    return built


def write_conf(folder: Path, repository: Path, browsable: bool) -> Path:
    path = folder / f"verify-{'browse' if browsable else 'plain'}.conf"
    path.write_text(
        "# Generated by bench.verify: only the repository and the outputs matter.\n"
        "<crawler-options>\n"
        f'starting-points = {{ "{base_url(host_name(0), PORT)}/" }};\n'
        f'repository = "{repository}";\n'
        "<output-options>\n"
        f"browsable = {'yes' if browsable else 'no'};\n",
        encoding="utf-8",
    )
    return path


_SUMMARY = re.compile(
    r"Verified .*: (\d+) documents, (\d+) files(?:, (\d+) browse files \((\d+) links\))?: "
    r"(.*) \(([\d.]+) s\)"
)


@dataclass
class Check:
    browsable: bool
    run: int
    measured: Measured
    summary: str  # scrapy verify's summary line
    problems: list[str]  # its first problem lines


def run_verify(folder: Path, conf: Path, browsable: bool, run: int, jobs: int | None) -> Check:
    out = folder / f"verify-{run}-{'browse' if browsable else 'plain'}.txt"
    command = [sys.executable, "-m", "scrapy", "verify", str(conf)]
    command += ["--jobs", str(jobs)] if jobs else []
    measured = measure(command, PROJECT, out, timeout=3600)
    lines = out.read_text(encoding="utf-8", errors="replace").splitlines()
    summary = next((line for line in lines if line.startswith("Verified ")), "")
    problems = [line for line in lines if line and not line.startswith("Verified ")][:5]
    return Check(browsable, run, measured, summary, problems)


COLUMNS = ("browsable", "run", "wall s", "CPU s", "peak RSS MB", "other CPU s", "exit")


def _row(browsable: bool, run: str, m: Measured) -> str:
    cells = ["yes" if browsable else "no", run, f"{m.wall:.1f}", f"{m.cpu:.1f}"]
    cells += [f"{m.rss_mb:.0f}", f"{m.other_cpu:.1f}", str(m.status)]
    return "| " + " | ".join(cells) + " |"


def table(rows: list[str]) -> list[str]:
    return ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|", *rows]


def report(args: argparse.Namespace, built: Built, checks: list[Check], started: str) -> str:
    browse_note = (
        f"; browse/ written in {built.browse_seconds:.0f} s ({built.browse_cpu:.0f} CPU s)"
        if args.browsable
        else ""
    )
    parts = [
        f"# scrapy verify on {built.documents:,} documents",
        "",
        f"- repository: {built.documents:,} documents ({args.hosts} hosts, "
        f"{PDFS_PER_HOST * args.hosts} PDFs, the pages of bench.generate, seed {args.seed}), "
        f"{built.mirror_bytes / 1e6:,.0f} MB; mirror, state and index.txt written in "
        f"{built.seconds:.0f} s ({built.cpu:.0f} CPU s){browse_note}",
        f"- scrapy verify --jobs {args.jobs or 'one per CPU'}; files in the page cache",
        *machine_lines(),
        f"- started: {started}; command: `python -m bench.verify {' '.join(args.argv)}`",
        "",
        "## Runs",
        "",
        *table([_row(c.browsable, str(c.run), c.measured) for c in checks]),
        "",
        f"## Medians ({args.runs} run{'s' if args.runs > 1 else ''})",
        "",
    ]
    rows = []
    for browsable in dict.fromkeys(c.browsable for c in checks):
        ms = [c.measured for c in checks if c.browsable == browsable]
        median = Measured(
            status=",".join(sorted({str(m.status) for m in ms})),
            wall=statistics.median(m.wall for m in ms),
            cpu=statistics.median(m.cpu for m in ms),
            rss_mb=statistics.median(m.rss_mb for m in ms),
            server_cpu=0.0,
            other_cpu=statistics.median(m.other_cpu for m in ms),
        )
        rows.append(_row(browsable, f"median of {len(ms)}", median))
    parts += table(rows)
    summaries = dict.fromkeys(
        f"browsable = {'yes' if c.browsable else 'no'}: {_SUMMARY.sub(_summary_text, c.summary)}"
        for c in checks
    )
    notes = [f"scrapy verify, {s}" for s in summaries]
    for c in checks:
        if c.measured.other_cpu > 0.2 * c.measured.wall:
            notes.append(
                f"run {c.run}, browsable {'yes' if c.browsable else 'no'}: other processes took "
                f"{c.measured.other_cpu:.0f} CPU s during its {c.measured.wall:.0f} s: the "
                "machine was not quiet"
            )
        notes += [f"problem reported: {line}" for line in c.problems]
    parts += ["", "## Notes", "", *(f"- {n}" for n in dict.fromkeys(notes))]
    return "\n".join(parts) + "\n"


def _summary_text(match: re.Match[str]) -> str:
    """The summary line without the repository's temporary path and with its own timing."""
    text = f"{int(match[1]):,} documents, {int(match[2]):,} files"
    if match[3]:
        text += f", {int(match[3]):,} browse files ({int(match[4]):,} links)"
    return f"{text}: {match[5]}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.verify",
        description="Time scrapy verify on a synthetic repository of a complete crawl.",
    )
    parser.add_argument("--documents", type=int, default=200_000, help="pages and PDFs [200000]")
    parser.add_argument("--hosts", type=int, default=20, help="hosts [20]")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the pages [1]")
    parser.add_argument("--runs", type=int, default=3, help="runs of each check [3]")
    parser.add_argument("--jobs", type=int, help="scrapy verify --jobs [its default: one per CPU]")
    parser.add_argument(
        "--no-browsable", dest="browsable", action="store_false", help="build no browse/"
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument("--keep", action="store_true", help="keep the repository")
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="tarantula-verify-"))
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    try:
        root = folder / "repository"
        print(f"building {args.documents} documents in {root} ...", flush=True)
        built = build_repository(root, args.documents, args.hosts, args.seed, args.browsable)
        print(
            f"built in {built.seconds:.0f} s"
            + (f", browse/ in {built.browse_seconds:.0f} s" if args.browsable else ""),
            flush=True,
        )
        options = [False, True] if args.browsable else [False]
        confs = {b: write_conf(folder, root, b) for b in options}
        checks = []
        for run in range(1, args.runs + 1):
            # Each run starts with the other check, so neither always goes first.
            for browsable in options if run % 2 else options[::-1]:
                check = run_verify(folder, confs[browsable], browsable, run, args.jobs)
                print(
                    f"run {run}/{args.runs}, browsable {'yes' if browsable else 'no'}: "
                    f"{check.measured.wall:.1f} s, {check.measured.cpu:.1f} CPU s, "
                    f"exit {check.measured.status}",
                    flush=True,
                )
                checks.append(check)
        text = report(args, built, checks, started)
    finally:
        if args.keep:
            print(f"work folder kept: {folder}", flush=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    path = write_report(text, "verify", args.results_dir)
    print()
    print(text + f"\n(written to {path})", flush=True)
    return 0 if all(c.measured.status == 0 for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
