"""Timed crawls of a generated web: Tarantula against a bare Scrapy spider (and GNU wget).

    python -m bench.run --preset small --runs 3          # nginx; Tarantula and bare Scrapy
    python -m bench.run --preset small --runs 3 --wget   # ... and wget --recursive
    python -m bench.run --preset tiny --runs 1 --no-nginx
    python -m bench.run --preset latency --runs 1        # 200 ms per answer; Tarantula vs wget
    python -m bench.run --memory                         # Tarantula's peak RSS on small and large
    python -m bench.run --crawlers tarantula,tarantula-warc,tarantula-browse  # warc, browsable
    python -m bench.run --crawlers tarantula --baseline 00f66a9   # today's against a commit's

One invocation generates the web for a free port on 127.0.0.1, starts one server (nginx, or the
asyncio server of :mod:`bench.servers`) and runs every crawler once per run against it, one after
the other. Each crawler is a child process measured on its own (``os.wait4``): wall time, user+sys
CPU seconds, peak RSS. Fetched URLs are compared with the manifest. The per-run table and the
medians are printed and written to ``bench/results/<preset>-<timestamp>.md``.

``tarantula-warc`` and ``tarantula-browse`` are Tarantula with ``warc = yes`` or ``browsable = yes``
in ``<output-options>`` (SPEC 11); run beside ``tarantula``, the report adds each one's pages/s and
CPU per page over plain Tarantula's: the cost of the option.

Every host name of the web is mapped to 127.0.0.1 by Tarantula's resolver (the config's ``resolve``
keys for Tarantula, the project's ``TWISTED_DNS_RESOLVER`` for the bare spider); wget, which has no
such setting, sends every request to the server as to an HTTP proxy. Nothing but 127.0.0.1 is
contacted, and no system file is changed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.generate import DOMAIN, PRESETS, generate
from bench.servers import LatencyServer, Nginx, free_port, nginx_binary, nginx_version
from bench.shared import at_once, crawl_command, run_shared
from tarantula import settings as tarantula_settings

PROJECT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
BASELINE_SPIDER = BENCH / "baseline_spider.py"
RESULTS = BENCH / "results"
RESOLVE = f"*.{DOMAIN}=127.0.0.1"
CONCURRENCY = 16
LATENCY_DELAY = 0.2
#: Tarantula's crawlers: the ``<output-options>`` each one turns on (SPEC 11).
TARANTULA_OUTPUTS: dict[str, tuple[str, ...]] = {
    "tarantula": (),
    "tarantula-warc": ("warc",),
    "tarantula-browse": ("browsable",),
}
#: Tarantula sharing the crawl through a fresh Redis (bench/shared.py): the number of workers.
SHARED_WORKERS = {"tarantula-redis1": 1, "tarantula-redis2": 2}
#: The same through a Redis Cluster of three masters (the frontier spread over them by host).
CLUSTER_WORKERS = {"tarantula-cluster1": 1, "tarantula-cluster2": 2}
#: Two one-process crawls of the whole web at once, each its own: the load of two workers on
#: this machine without Redis (:func:`run_pair`).
PAIR = "tarantula-pair"
CRAWLERS = (
    *TARANTULA_OUTPUTS,
    *SHARED_WORKERS,
    *CLUSTER_WORKERS,
    PAIR,
    "scrapy",
    "scrapy-fetch",
    "scrapy-fetch-lean",
    "wget",
)


def _lean_settings() -> tuple[dict[str, str], tuple[str, ...]]:
    """``scrapy-fetch-lean``'s settings: Scrapy's components as Tarantula's settings leave them
    (read from :mod:`tarantula.settings`, so the floor follows them): cookies and the stats hook
    as there, one item task per response, and every Scrapy middleware it switches off without
    putting one of its own in the place (its robots.txt and redirect middlewares replace Scrapy's,
    which the fetch-only spider keeps). Also the class names that must not show in Scrapy's log
    as enabled."""
    own = {
        path.rpartition(".")[2]
        for path in tarantula_settings.DOWNLOADER_MIDDLEWARES
        if path.startswith("tarantula.")
    }
    off = {
        "SPIDER_MIDDLEWARES": [
            path for path, order in tarantula_settings.SPIDER_MIDDLEWARES.items() if order is None
        ],
        "DOWNLOADER_MIDDLEWARES": [
            path
            for path, order in tarantula_settings.DOWNLOADER_MIDDLEWARES.items()
            if order is None and path.rpartition(".")[2] not in own
        ],
    }
    values = {
        "COOKIES_ENABLED": str(tarantula_settings.COOKIES_ENABLED),
        "STATS_CLASS": tarantula_settings.STATS_CLASS,
        "CONCURRENT_ITEMS": str(tarantula_settings.CONCURRENT_ITEMS),
    } | {name: json.dumps(dict.fromkeys(paths)) for name, paths in off.items()}
    cookies = () if tarantula_settings.COOKIES_ENABLED else ("CookiesMiddleware",)
    names = (*cookies, *(path.rpartition(".")[2] for paths in off.values() for path in paths))
    return values, names


#: ``scrapy-fetch-lean``'s settings, and the components its report says are on if Scrapy's log
#: lists them as enabled.
LEAN_SETTINGS, LEAN_OFF = _lean_settings()
_PROXY_VARIABLES = {"http_proxy", "https_proxy", "ftp_proxy", "all_proxy", "no_proxy"}


# --- measuring one child ------------------------------------------------------------------------


@dataclass
class Measured:
    status: int | str  # exit status, or "timeout"
    wall: float
    cpu: float  # user + sys seconds of the child
    rss_mb: float  # the child's peak resident set size
    server_cpu: float  # CPU seconds the server spent meanwhile
    other_cpu: float  # CPU seconds the machine spent meanwhile on anything else


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy() -> float:
    """CPU seconds the machine has spent busy since boot, all cores (0 where /proc is missing)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # guest time is already in user
    return busy / _TICK


def child_env(tree: Path = PROJECT) -> dict[str, str]:
    """The harness's environment without proxy settings or a Scrapy project of its own; Python
    finds Tarantula in ``tree`` (the project's, or a baseline's worktree) first."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in _PROXY_VARIABLES and not k.startswith("SCRAPY_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    return env


def measure(
    command: list[str],
    cwd: Path,
    out: Path,
    timeout: float,
    server_cpu: Callable[[], float] = lambda: 0.0,
    tree: Path = PROJECT,
) -> Measured:
    """Run ``command`` with stdout and stderr to ``out``; time it and read its rusage (through
    :mod:`bench.peak`, so that the harness's own memory is not counted as the command's)."""
    peak = out.with_name(out.name + ".peak")
    command = [sys.executable, str(BENCH / "peak.py"), str(peak), "--", *command]
    with open(out, "wb") as log:
        busy, server = machine_busy(), server_cpu()
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=child_env(tree),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        expired = threading.Event()

        def kill() -> None:
            expired.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:  # Ctrl-C: the child has its own session and would outlive us
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        finally:
            timer.cancel()
        wall = time.perf_counter() - started
        busy, server = machine_busy() - busy, server_cpu() - server
    process.returncode = os.waitstatus_to_exitcode(status)
    maxrss, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime  # if bench.peak was killed
    if peak.exists():
        fields = peak.read_text(encoding="ascii").split()
        maxrss, cpu = int(fields[0]), float(fields[1]) + float(fields[2])
    return Measured(
        status="timeout" if expired.is_set() else process.returncode,
        wall=wall,
        cpu=cpu,
        rss_mb=maxrss / 1024,  # KiB on Linux
        server_cpu=server,
        other_cpu=max(0.0, busy - cpu - server),
    )


# --- results ------------------------------------------------------------------------------------


@dataclass
class Result:
    crawler: str
    run: int
    pages: int  # documents fetched, robots.txt excluded
    wall: float
    cpu: float
    rss_mb: float
    complete: float  # fraction of the manifest's URLs fetched
    status: int | str
    server_cpu: float = 0.0
    other_cpu: float = 0.0
    notes: list[str] = field(default_factory=list)
    vs_scrapy: float | None = None
    redis_cpu: float = 0.0  # CPU seconds of the Redis server (shared crawls)
    redis_bytes: int = 0  # what the shared crawl left in Redis's memory (used_memory, bytes)
    keys_bytes: int = 0  # what the shared crawl's keys hold in Redis's memory (bytes)

    @classmethod
    def of(
        cls, crawler: str, run: int, pages: int, m: Measured, complete: float, notes: list[str]
    ) -> Result:
        return cls(
            crawler,
            run,
            pages,
            m.wall,
            m.cpu,
            m.rss_mb,
            complete,
            m.status,
            m.server_cpu,
            m.other_cpu,
            notes,
        )

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall if self.wall else 0.0

    @property
    def cpu_per_1k(self) -> float:
        return 1000 * self.cpu / self.pages if self.pages else float("nan")


COLUMNS = (
    "crawler",
    "run",
    "pages",
    "wall s",
    "pages/s",
    "CPU s",
    "CPU s / 1k pages",
    "peak RSS MB",
    "server CPU s",
    "other CPU s",
    "complete",
    "pages/s vs Scrapy",
    "exit",
)


def _row(r: Result, run: str) -> list[str]:
    return [
        r.crawler,
        run,
        f"{r.pages}",
        f"{r.wall:.1f}",
        f"{r.pages_per_s:.1f}",
        f"{r.cpu:.1f}",
        f"{r.cpu_per_1k:.2f}" if r.pages else "-",
        f"{r.rss_mb:.0f}",
        f"{r.server_cpu:.1f}",
        f"{r.other_cpu:.1f}",
        f"{100 * r.complete:.1f}%",
        "-" if r.vs_scrapy is None else f"{r.vs_scrapy:.2f}",
        f"{r.status}",
    ]


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass
class Median:
    """The median of each column over the runs of one crawler (ratios included)."""

    result: Result
    pages_per_s: float  # the median of the runs' pages/s, not the ratio of two medians
    cpu_per_1k: float


def medians(results: list[Result]) -> list[Median]:
    out = []
    for crawler in dict.fromkeys(r.crawler for r in results):
        rs = [r for r in results if r.crawler == crawler]
        ratios = [r.vs_scrapy for r in rs if r.vs_scrapy is not None]
        median = Result(
            crawler=crawler,
            run=0,
            pages=round(statistics.median(r.pages for r in rs)),
            wall=statistics.median(r.wall for r in rs),
            cpu=statistics.median(r.cpu for r in rs),
            rss_mb=statistics.median(r.rss_mb for r in rs),
            complete=statistics.median(r.complete for r in rs),
            status=",".join(sorted({str(r.status) for r in rs})),
            server_cpu=statistics.median(r.server_cpu for r in rs),
            other_cpu=statistics.median(r.other_cpu for r in rs),
            vs_scrapy=statistics.median(ratios) if ratios else None,
        )
        pps = statistics.median(r.pages_per_s for r in rs)
        cpk = statistics.median(r.cpu_per_1k for r in rs)
        out.append(Median(median, pps, cpk))
    return out


def median_rows(results: list[Result], runs: int) -> list[list[str]]:
    rows = []
    for m in medians(results):
        row = _row(m.result, f"median of {runs}")
        row[4] = f"{m.pages_per_s:.1f}"
        row[6] = f"{m.cpu_per_1k:.2f}" if m.result.pages else "-"
        rows.append(row)
    return rows


# --- the crawlers -------------------------------------------------------------------------------


@dataclass
class Web:
    folder: Path
    manifest: dict[str, Any]
    port: int

    @property
    def urls(self) -> set[str]:
        return set(self.manifest["urls"])

    @property
    def seed(self) -> str:
        return str(self.manifest["seed"])


@dataclass
class Context:
    """What every crawler run needs: the web, the time limit, the server's CPU counter."""

    web: Web
    timeout: float
    server_cpu: Callable[[], float]
    tarantula_seeds: list[str]


def completeness(fetched: set[str], web: Web) -> tuple[float, list[str]]:
    wanted = web.urls
    missing = sorted(wanted - fetched)
    return (len(wanted) - len(missing)) / len(wanted), missing


def _missing_notes(crawler: str, missing: list[str], web: Web) -> list[str]:
    if not missing:
        return []
    kinds: dict[str, int] = {}
    for url in missing:
        host = url.split("/")[2].split(":")[0]
        kind = "pdf" if url.endswith(".pdf") else "html"
        kinds[f"{host} {kind}"] = kinds.get(f"{host} {kind}", 0) + 1
    top = ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:6])
    return [
        f"{crawler}: {len(missing)} of {len(web.urls)} manifest URLs not fetched ({top}); "
        f"first: {', '.join(missing[:3])}"
    ]


def _log_lines(text: str, levels: tuple[str, ...], limit: int = 5) -> list[str]:
    found = [line for line in text.splitlines() if any(f" {lv}: " in line for lv in levels)]
    return found[:limit]


def write_tarantula_conf(
    folder: Path, web: Web, seeds: list[str], outputs: tuple[str, ...] = (), redis: str = ""
) -> Path:
    seed_list = ", ".join(f'"{s}"' for s in seeds)
    text = (
        "# Generated by bench.run: a complete, impolite crawl of the synthetic web.\n"
        "<crawler-options>\n"
        f"starting-points = {{ {seed_list} }};\n"
        "scope = domain-scope;\n"
        f'repository = "{folder / "repository"}";\n'
        "delay = 0;\n"
        f"host-concurrency = {CONCURRENCY};\n"
        "max-depth = 0;\n"
        f'resolve = {{ "{RESOLVE}" }};\n'
        "resolve-only = yes;\n"
        "<logging>\n"
        f'log-file = "{folder / "crawl.log"}";\n'
        "log-level = 0;\n"
        "<multithreading-options>\n"
        f"threads = {CONCURRENCY};\n"
    )
    if outputs:
        text += "<output-options>\n" + "".join(f"{key} = yes;\n" for key in outputs)
    if redis:
        text += f'<distributed-options>\nredis = "{redis}";\n'
    path = folder / "crawl.conf"
    path.write_text(text, encoding="utf-8")
    return path


def index_urls(index: Path) -> list[str]:
    """The normalized URL of every record line of Tarantula's index.txt."""
    if not index.exists():
        return []
    urls = []
    with open(index, encoding="utf-8") as f:
        for line in f:
            if line.startswith("\t") or not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) > 1:
                urls.append(fields[1])
    return urls


def run_tarantula(folder: Path, ctx: Context, run: int, crawler: str = "tarantula",
                  tree: Path = PROJECT) -> Result:  # fmt: skip
    """Tarantula's crawl, from the project's tree or from ``tree`` (a baseline's worktree)."""
    folder.mkdir(parents=True)
    web = ctx.web
    conf = write_tarantula_conf(
        folder, web, ctx.tarantula_seeds, TARANTULA_OUTPUTS.get(crawler, ())
    )
    command = crawl_command(conf)
    m = measure(command, tree, folder / "output.txt", ctx.timeout, ctx.server_cpu, tree)
    urls = index_urls(folder / "repository" / "index.txt")
    fraction, missing = completeness(set(urls), web)
    notes = _missing_notes(crawler, missing, web)
    if m.status != 0:
        notes.append(f"{crawler}: exit status {m.status}")
    log = folder / "crawl.log"
    log_text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    output = (folder / "output.txt").read_text(encoding="utf-8", errors="replace")
    if missing or m.status != 0:
        problems = _log_lines(log_text + "\n" + output, ("ERROR", "WARNING", "CRITICAL"))
        notes += [f"{crawler} log: {line}" for line in problems]
        summary = [line.strip() for line in output.splitlines() if line.startswith(("Crawl", "  "))]
        if summary:
            notes.append(f"{crawler} summary: " + "; ".join(summary[:8]))
    return Result.of(crawler, run, len(urls), m, fraction, notes)


def run_pair(folder: Path, ctx: Context, run: int) -> Result:
    """Two one-process crawls of the whole web at once, each into a repository of its own
    (``tarantula-pair``), timed and measured together: its pages are both crawls' and its CPU a
    page theirs together. Two workers of a shared crawl load this machine of two cores as much (a
    core each, beside the web server), so their CPU a page is compared with this one's as well as
    with one process's alone: it says what share of the difference the two crawlers' contention
    for the machine makes, whatever they share."""
    folder.mkdir(parents=True)
    confs = []
    for name in ("a", "b"):
        (folder / name).mkdir()
        confs.append(write_tarantula_conf(folder / name, ctx.web, ctx.tarantula_seeds))
    command = at_once([crawl_command(conf) for conf in confs])
    m = measure(command, PROJECT, folder / "output.txt", ctx.timeout, ctx.server_cpu)
    notes, pages, fractions = [], 0, []
    for name in ("a", "b"):
        urls = index_urls(folder / name / "repository" / "index.txt")
        fraction, missing = completeness(set(urls), ctx.web)
        pages += len(urls)
        fractions.append(fraction)
        notes += _missing_notes(f"{PAIR} ({name})", missing, ctx.web)
    if m.status != 0:
        notes.append(f"{PAIR}: exit status {m.status}")
    return Result.of(PAIR, run, pages, m, min(fractions), notes)


def run_scrapy(
    folder: Path, ctx: Context, run: int, fetch_only: bool = False, lean: bool = False
) -> Result:
    """Bare Scrapy following every link from the seed; with ``fetch_only``, fetching each URL of
    the web once from a list and parsing nothing (``scrapy-fetch``: Scrapy's own cost per page),
    and with ``lean`` as well, with Scrapy's components as Tarantula leaves them
    (``scrapy-fetch-lean``)."""
    name = "scrapy-fetch-lean" if lean else "scrapy-fetch" if fetch_only else "scrapy"
    folder.mkdir(parents=True)
    web = ctx.web
    url_log, log = folder / "urls.txt", folder / "scrapy.log"
    settings = {
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(log),
        "ROBOTSTXT_OBEY": "True",
        "CONCURRENT_REQUESTS": str(CONCURRENCY),
        "CONCURRENT_REQUESTS_PER_DOMAIN": str(CONCURRENCY),
        "DOWNLOAD_DELAY": "0",
        "TELNETCONSOLE_ENABLED": "False",
        "REMOTE_CONTROL_ENABLED": "False",
        "HTTPPROXY_ENABLED": "False",
        "TWISTED_DNS_RESOLVER": "tarantula.resolver.MappedResolver",
        "TARANTULA_RESOLVE": RESOLVE,
        "TARANTULA_RESOLVE_ONLY": "True",
        "BENCH_URL_LOG": str(url_log),
    } | (LEAN_SETTINGS if lean else {})
    command = [sys.executable, "-m", "scrapy", "runspider", str(BASELINE_SPIDER)]
    if fetch_only:
        url_list = folder / "fetch.txt"
        url_list.write_text("".join(f"{url}\n" for url in web.manifest["urls"]), encoding="utf-8")
        command += ["-a", f"urls={url_list}"]
    else:
        command += ["-a", f"seed={web.seed}"]
    for setting, value in settings.items():
        command += ["-s", f"{setting}={value}"]
    # The working folder is outside the project, so none of Tarantula's project settings apply.
    m = measure(command, folder, folder / "output.txt", ctx.timeout, ctx.server_cpu)
    lines = url_log.read_text(encoding="utf-8").splitlines() if url_log.exists() else []
    fetched = [line.partition(" ")[2] for line in lines]
    documents = [u for u in fetched if not u.endswith("/robots.txt")]
    ok = {u for line, u in zip(lines, fetched, strict=True) if line.startswith("200 ")}
    fraction, missing = completeness(ok, web)
    notes = _missing_notes(name, missing, web)
    log_text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    stat = re.search(r"'response_received_count': (\d+)", log_text)
    if stat and int(stat.group(1)) != len(fetched):
        notes.append(f"{name}: response_received_count {stat.group(1)}, URL log {len(fetched)}")
    if lean:  # Scrapy logs the components it enabled: none of these may be among them
        notes += [f"{name}: {part} is on" for part in LEAN_OFF if f".{part}'" in log_text]
    if "'BOT_NAME': 'tarantula'" in log_text:
        notes.append(f"{name}: Tarantula's project settings were loaded")
    dupes = len(documents) - len(set(documents))
    if dupes:
        notes.append(
            f"{name}: {dupes} URL(s) fetched twice (CrawlSpider's start URL is dont_filter)"
        )
    if m.status != 0 or (stat is None and m.status != "timeout"):
        notes += [f"{name} log: {line}" for line in _log_lines(log_text, ("ERROR", "CRITICAL"))]
    return Result.of(name, run, len(documents), m, fraction, notes)


_WGET_URL = re.compile(r"URL:\s*(\S+)")


def run_wget(folder: Path, ctx: Context, run: int) -> Result:
    folder.mkdir(parents=True)
    web = ctx.web
    log = folder / "wget.log"
    # wget has no resolver setting: every request goes to the server as to an HTTP proxy.
    command = ["wget", "--no-config", "-r", "-l", "inf", "-np", "--no-verbose", "-e", "robots=on"]
    command += ["-H", "-D", DOMAIN, "-e", "use_proxy=yes", "-e", f"http_proxy=127.0.0.1:{web.port}"]
    command += ["-P", str(folder / "mirror"), "-o", str(log), web.seed]
    m = measure(command, folder, folder / "output.txt", ctx.timeout, ctx.server_cpu)
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    fetched = [match.group(1) for match in _WGET_URL.finditer(text)]
    documents = [u for u in fetched if not u.endswith("/robots.txt")]
    fraction, missing = completeness(set(documents), web)
    notes = _missing_notes("wget", missing, web)
    if m.status != 0:  # wget exits 8 when a server answered an error, as for a missing page
        notes.append(f"wget: exit status {m.status}")
    return Result.of("wget", run, len(documents), m, fraction, notes)


# --- the benchmark ------------------------------------------------------------------------------


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:  # the project itself, importable from its folder even when not installed
        return str(importlib.import_module(name).__version__)
    except (ImportError, AttributeError):
        return "not installed"


def _wget_version() -> str:
    if shutil.which("wget") is None:
        return "not installed"
    first = subprocess.run(["wget", "--version"], capture_output=True, text=True).stdout
    return first.split("\n", 1)[0].removeprefix("GNU Wget ").split(" ", 1)[0]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _commit(rev: str = "HEAD") -> str:
    """The project's commit (or ``rev``'s), and whether Tarantula's code differs from HEAD's
    (read-only git)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", rev], cwd=PROJECT, capture_output=True, text=True
        ).stdout.strip()
        if rev != "HEAD":
            return head or "unknown"
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--", "tarantula"],
            cwd=PROJECT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return (head or "unknown") + (" with uncommitted changes in tarantula/" if changed else "")


def machine_lines() -> list[str]:
    return [
        f"- machine: {os.cpu_count()} cores ({_cpu_model()}), Linux {platform.release()}, "
        f"Python {platform.python_version()}",
        f"- Tarantula {_version('tarantula')} (commit {_commit()}), Scrapy {_version('scrapy')}, "
        f"Twisted {_version('twisted')}, nginx {nginx_version()}, wget {_wget_version()}",
    ]


@contextlib.contextmanager
def serving(web: Web, kind: str, delay: float) -> Iterator[tuple[str, Callable[[], float]]]:
    """Start the server; yields its description and its CPU counter."""
    if kind == "nginx":
        with Nginx(web.folder, web.port) as nginx:
            desc = f"nginx {nginx_version()} ({nginx.workers} workers, sendfile, access log off)"
            yield desc, nginx.cpu_seconds
    else:
        with LatencyServer(web.folder, web.port, delay) as server:
            yield (
                f"asyncio server ({delay * 1000:.0f} ms per answer, keep-alive)",
                server.cpu_seconds,
            )


def make_web(root: Path, preset: str, seed: int) -> Web:
    port = free_port()
    started = time.perf_counter()
    manifest = generate(root / "web", preset, seed, port)
    elapsed = time.perf_counter() - started
    print(
        f"generated {preset}: {len(manifest['hosts'])} hosts, "
        f"{len(manifest['urls'])} URLs, {manifest['bytes']:,} bytes in {elapsed:.1f} s "
        f"(seed {seed}, port {port})",
        flush=True,
    )
    return Web(root / "web", manifest, port)


def default_timeout(web: Web, delay: float) -> float:
    return 300 + len(web.urls) * (0.05 + delay)


Runner = Callable[[Path, Context, int], Result]
RUNNERS: dict[str, Runner] = {
    **{name: functools.partial(run_tarantula, crawler=name) for name in TARANTULA_OUTPUTS},
    **{name: functools.partial(run_shared, workers=n) for name, n in SHARED_WORKERS.items()},
    **{
        name: functools.partial(run_shared, workers=n, crawler=name, cluster=True)
        for name, n in CLUSTER_WORKERS.items()
    },
    PAIR: run_pair,
    "scrapy": run_scrapy,
    "scrapy-fetch": functools.partial(run_scrapy, fetch_only=True),
    "scrapy-fetch-lean": functools.partial(run_scrapy, fetch_only=True, lean=True),
    "wget": run_wget,
}


def crawl_runs(
    ctx: Context, root: Path, crawlers: list[str], runs: int, keep: bool
) -> list[Result]:
    results: list[Result] = []
    for run in range(1, runs + 1):
        this_run: dict[str, Result] = {}
        # Each run starts with the next crawler, so no crawler always goes first.
        shift = (run - 1) % len(crawlers)
        for crawler in crawlers[shift:] + crawlers[:shift]:
            folder = root / f"run-{run}" / crawler
            print(f"run {run}/{runs}: {crawler} ...", end=" ", flush=True)
            result = RUNNERS[crawler](folder, ctx, run)
            print(
                f"{result.pages} pages in {result.wall:.1f} s ({result.pages_per_s:.1f}/s), "
                f"complete {100 * result.complete:.1f}%, exit {result.status}",
                flush=True,
            )
            if result.other_cpu > 0.2 * result.wall:
                result.notes.append(
                    f"{crawler}, run {run}: other processes took {result.other_cpu:.0f} CPU s "
                    f"during its {result.wall:.0f} s (server excluded): the machine was not quiet"
                )
            this_run[crawler] = result
            if not keep:  # the mirrors are large; the logs stay until the end
                for mirror in ("repository", "mirror"):
                    shutil.rmtree(folder / mirror, ignore_errors=True)
        scrapy = this_run.get("scrapy")
        for result in (this_run[c] for c in crawlers):
            if scrapy is not None and scrapy.pages_per_s:
                result.vs_scrapy = result.pages_per_s / scrapy.pages_per_s
            results.append(result)
    return results


def report(
    title: str,
    header: list[str],
    results: list[Result],
    runs: int,
    extra: list[str],
) -> str:
    notes = [note for r in results for note in r.notes]
    parts = [
        f"# {title}",
        "",
        *header,
        "",
        "## Runs",
        "",
        markdown_table([_row(r, str(r.run)) for r in results]),
    ]
    parts += ["", f"## Medians ({runs} run{'s' if runs > 1 else ''})", ""]
    parts += [markdown_table(median_rows(results, runs))]
    if extra:
        parts += ["", *extra]
    if notes:
        parts += ["", "## Notes", "", *(f"- {n}" for n in dict.fromkeys(notes))]
    return "\n".join(parts) + "\n"


def write_report(text: str, name: str, results_dir: Path) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.md"
    path.write_text(text, encoding="utf-8")
    return path


def choose_server(args: argparse.Namespace) -> tuple[str, float, list[str]]:
    """(server kind, delay, notes) for a run."""
    if args.preset == "latency":
        delay = LATENCY_DELAY if args.delay_ms is None else args.delay_ms / 1000
        return "asyncio", delay, []
    delay = 0.0 if args.delay_ms is None else args.delay_ms / 1000
    if args.no_nginx or delay:
        return "asyncio", delay, []
    if nginx_binary() is None:
        return "asyncio", 0.0, ["nginx is not installed: the asyncio server (0 ms) stood in"]
    return "nginx", 0.0, []


def benchmark(args: argparse.Namespace, root: Path) -> str:
    preset = args.preset
    crawlers = args.crawlers or (
        ["tarantula", "scrapy", "wget"]
        if preset == "latency" or args.wget
        else ["tarantula", "scrapy"]
    )
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    kind, delay, server_notes = choose_server(args)
    if "wget" in crawlers and shutil.which("wget") is None:
        crawlers.remove("wget")
        server_notes.append("wget is not installed: skipped")
    web = make_web(root, preset, args.seed)
    seeds = [web.seed] if args.single_seed else list(web.manifest["host_roots"])
    timeout = args.timeout or default_timeout(web, delay)
    with (
        serving(web, kind, delay) as (server, server_cpu),
        baseline(args.baseline, root, crawlers) as old,
    ):
        crawlers += old
        print(f"serving on 127.0.0.1:{web.port} with {server}", flush=True)
        ctx = Context(web, timeout, server_cpu, seeds)
        results = crawl_runs(ctx, root, crawlers, args.runs, args.keep)
    spec = PRESETS[preset]
    header = [
        f"- web: preset `{preset}`, seed {args.seed}: {spec.hosts} hosts, {web.manifest['pages']} pages "
        f"+ {web.manifest['pdfs']} PDFs = {len(web.urls)} URLs to fetch, "
        f"{int(web.manifest['bytes']) / 1e6:.0f} MB",
        f"- server: {server} on 127.0.0.1, on the same machine as the crawlers",
        f"- Tarantula: threads {CONCURRENCY}, host-concurrency {CONCURRENCY}, delay 0, "
        f"domain-scope, {len(seeds)} seed(s)"
        + "".join(
            f"; {name}: the same with {', '.join(f'{key} = yes' for key in keys)}"
            for name, keys in TARANTULA_OUTPUTS.items()
            if keys and name in crawlers
        )
        + "".join(
            f"; {name}: {n} worker(s) of the same sharing the crawl through a fresh redis-server"
            for name, n in SHARED_WORKERS.items()
            if name in crawlers
        )
        + "".join(
            f"; {name}: {n} worker(s) of the same sharing the crawl through a fresh Redis Cluster "
            "of three masters"
            for name, n in CLUSTER_WORKERS.items()
            if name in crawlers
        )
        + f"; bare Scrapy: CrawlSpider, CONCURRENT_REQUESTS "
        f"and CONCURRENT_REQUESTS_PER_DOMAIN {CONCURRENCY}, robots.txt obeyed"
        + (
            "; scrapy-fetch: the same spider given every URL of the web, following and parsing nothing"
            if "scrapy-fetch" in crawlers
            else ""
        )
        + (
            "; scrapy-fetch-lean: the same, with cookies, the stats hook, offsite, HTTP auth and "
            "the spider middlewares Tarantula switches off switched off"
            if "scrapy-fetch-lean" in crawlers
            else ""
        )
        + (
            "; wget: one connection, through the server as an HTTP proxy"
            if "wget" in crawlers
            else ""
        ),
        *machine_lines(),
        *(
            [
                f"- tarantula@{args.baseline}: Tarantula as of commit {_commit(args.baseline)}, same config"
            ]
            if args.baseline
            else []
        ),
        f"- started: {started}; command: `python -m bench.run {' '.join(args.argv)}`",
    ]
    extra = [f"- {note}" for note in server_notes]
    extra += baseline_lines(results)
    extra += floor_lines(results)
    if preset == "latency":
        extra += latency_lines(results, web, delay)
    extra += output_lines(results)
    extra += shared_lines(results)
    text = report(f"Crawl benchmark: {preset}", header, results, args.runs, extra)
    path = write_report(text, preset, args.results_dir)
    return text + f"\n(written to {path})\n"


@contextlib.contextmanager
def baseline(rev: str | None, root: Path, crawlers: list[str]) -> Iterator[list[str]]:
    """With ``rev``: a git worktree of the project at that revision, and crawlers that run
    Tarantula from it: ``tarantula@REV``, and ``tarantula-redisN@REV`` (``-clusterN@REV``)
    beside each ``tarantula-redisN`` (``-clusterN``) of ``crawlers`` (removed at the end)."""
    if not rev:
        yield []
        return
    tree = root / "baseline"
    git = ["git", "-C", str(PROJECT), "worktree"]
    subprocess.run([*git, "add", "--detach", str(tree), rev], check=True, capture_output=True)
    names = [f"tarantula@{rev}"]
    RUNNERS[names[0]] = functools.partial(run_tarantula, crawler=names[0], tree=tree)
    for cluster, shared_workers in ((False, SHARED_WORKERS), (True, CLUSTER_WORKERS)):
        for shared, workers in shared_workers.items():
            if shared in crawlers:
                name = f"{shared}@{rev}"
                RUNNERS[name] = functools.partial(
                    run_shared, workers=workers, crawler=name, tree=tree, cluster=cluster
                )
                names.append(name)
    try:
        yield names
    finally:
        for name in names:
            del RUNNERS[name]
        subprocess.run([*git, "remove", "--force", str(tree)], check=False, capture_output=True)


def baseline_lines(results: list[Result]) -> list[str]:
    """Tarantula against a baseline revision of itself (medians), crawler by crawler."""
    by = {m.result.crawler: m for m in medians(results)}
    lines = []
    for name, old in by.items():
        now = by.get(name.partition("@")[0])
        if "@" not in name or now is None or not old.pages_per_s or not old.cpu_per_1k:
            continue
        lines.append(
            f"- {now.result.crawler} / {name} (medians): CPU s / 1k pages {now.cpu_per_1k:.2f} / "
            f"{old.cpu_per_1k:.2f} = {now.cpu_per_1k / old.cpu_per_1k:.2f}; pages/s "
            f"{now.pages_per_s:.1f} / {old.pages_per_s:.1f} = {now.pages_per_s / old.pages_per_s:.2f}"
            f"; peak RSS MB {now.result.rss_mb:.0f} / {old.result.rss_mb:.0f}"
        )
    return ["## Against the baseline", "", *lines, ""] if lines else []


def floor_lines(results: list[Result]) -> list[str]:
    """Tarantula (and a baseline revision) against Scrapy's floor: the CPU bare Scrapy spends to
    fetch every page of the web once, parsing nothing (``scrapy-fetch``, and
    ``scrapy-fetch-lean`` with Scrapy's components as Tarantula leaves them)."""
    by = {m.result.crawler: m for m in medians(results)}
    floors = {name: by.pop(name) for name in ("scrapy-fetch", "scrapy-fetch-lean") if name in by}
    lines = []
    for floor_name, floor in floors.items():
        if not floor.cpu_per_1k:
            continue
        for name, m in by.items():
            if name.startswith("tarantula") and m.cpu_per_1k:
                lines.append(
                    f"- {name} / {floor_name} (medians): CPU s / 1k pages {m.cpu_per_1k:.2f} / "
                    f"{floor.cpu_per_1k:.2f} = {m.cpu_per_1k / floor.cpu_per_1k:.2f}"
                )
    return ["", "## Against Scrapy's floor", "", *lines] if lines else []


def latency_lines(results: list[Result], web: Web, delay: float) -> list[str]:
    lines = ["## Latency", ""]
    by = {m.result.crawler: m.result for m in medians(results)}
    ideal = len(web.urls) * delay / CONCURRENCY
    tarantula = by.get("tarantula")
    if tarantula is not None:
        lines.append(
            f"- ideal wall time with {CONCURRENCY} requests in flight: {len(web.urls)} URLs x "
            f"{delay:g} s / {CONCURRENCY} = {ideal:.1f} s; Tarantula (median) {tarantula.wall:.1f} s, "
            f"{tarantula.wall / ideal:.2f}x the ideal"
        )
    wget = by.get("wget")
    if tarantula is not None and wget is not None and wget.wall and tarantula.wall:
        speedup = (
            (tarantula.pages / tarantula.wall) / (wget.pages / wget.wall)
            if wget.pages
            else float("nan")
        )
        lines.append(
            f"- pages/s: Tarantula {tarantula.pages / tarantula.wall:.1f}, wget (one connection) "
            f"{wget.pages / wget.wall:.1f}: Tarantula / wget = {speedup:.1f}"
        )
    return lines


def output_lines(results: list[Result]) -> list[str]:
    """The cost of each output option: its crawler's medians over plain Tarantula's."""
    by = {m.result.crawler: m for m in medians(results)}
    base = by.get("tarantula")
    others = [by[name] for name in TARANTULA_OUTPUTS if name != "tarantula" and name in by]
    if base is None or not others or not base.pages_per_s:
        return []
    lines = ["## Output options", ""]
    for m in others:
        lines.append(
            f"- {m.result.crawler} / tarantula (medians): pages/s {m.pages_per_s:.1f} / "
            f"{base.pages_per_s:.1f} = {m.pages_per_s / base.pages_per_s:.2f}, CPU s / 1k pages "
            f"{m.cpu_per_1k:.2f} / {base.cpu_per_1k:.2f} = {m.cpu_per_1k / base.cpu_per_1k:.2f}"
        )
    return lines


def shared_lines(results: list[Result]) -> list[str]:
    """A crawl shared through Redis against one process (medians): throughput with one and two
    workers, and CPU per page (the workers', then with Redis's own); two workers' also against
    two one-process crawls at once (``tarantula-pair``), when it ran."""
    by = {m.result.crawler: m for m in medians(results)}
    base = by.get("tarantula")
    shared = [by[name] for name in (*SHARED_WORKERS, *CLUSTER_WORKERS) if name in by]
    if base is None or not shared or not base.pages_per_s:
        return []

    def redis_per_1k(m: Median) -> float:
        """Redis's CPU s per 1k pages of a shared crawler (medians)."""
        cpu = statistics.median(r.redis_cpu for r in results if r.crawler == m.result.crawler)
        return 1000 * cpu / max(1, m.result.pages)

    lines = ["## Shared through Redis", ""]
    for m in shared:
        with_redis = m.cpu_per_1k + redis_per_1k(m)
        redis_per_doc = statistics.median(
            r.redis_bytes / max(1, r.pages) for r in results if r.crawler == m.result.crawler
        )
        keys_per_doc = statistics.median(
            r.keys_bytes / max(1, r.pages) for r in results if r.crawler == m.result.crawler
        )
        lines.append(
            f"- {m.result.crawler} / tarantula (medians): pages/s {m.pages_per_s:.1f} / "
            f"{base.pages_per_s:.1f} = {m.pages_per_s / base.pages_per_s:.2f}; CPU s / 1k pages "
            f"{m.cpu_per_1k:.2f} / {base.cpu_per_1k:.2f} = {m.cpu_per_1k / base.cpu_per_1k:.2f} "
            f"(with Redis's {redis_per_1k(m):.2f}: {with_redis / base.cpu_per_1k:.2f}); Redis "
            f"memory a stored document: {keys_per_doc:,.0f} bytes the crawl's keys, "
            f"{redis_per_doc:,.0f} the server's growth"
        )
    pair = by.get(PAIR)
    for where, names in (("", SHARED_WORKERS), (" on the cluster", CLUSTER_WORKERS)):
        one, two = (by.get(name) for name in names)
        if one is not None and two is not None and one.pages_per_s:
            lines.append(
                f"- two workers / one worker{where}: pages/s {two.pages_per_s:.1f} / "
                f"{one.pages_per_s:.1f} = {two.pages_per_s / one.pages_per_s:.2f}"
            )
        if two is not None and pair is not None and pair.cpu_per_1k:
            with_redis = two.cpu_per_1k + redis_per_1k(two)
            lines.append(
                f"- two workers{where} / two one-process crawls at once ({PAIR}): CPU s / 1k "
                f"pages {two.cpu_per_1k:.2f} / {pair.cpu_per_1k:.2f} = "
                f"{two.cpu_per_1k / pair.cpu_per_1k:.2f} (with Redis's: "
                f"{with_redis / pair.cpu_per_1k:.2f}); the pair / one process alone: "
                f"{pair.cpu_per_1k / base.cpu_per_1k:.2f}"
            )
    return lines


def memory(args: argparse.Namespace, root: Path) -> str:
    """Tarantula's peak RSS on several presets (small and large by default) and their ratio."""
    presets = args.memory_presets
    results: list[Result] = []
    header = []
    server_desc = ""
    for preset in presets:
        args.preset = preset
        kind, delay, notes = choose_server(args)
        web = make_web(root / preset, preset, args.seed)
        seeds = [web.seed] if args.single_seed else list(web.manifest["host_roots"])
        timeout = args.timeout or default_timeout(web, delay)
        with serving(web, kind, delay) as (server, server_cpu):
            server_desc = server
            print(f"{preset}: serving on 127.0.0.1:{web.port} with {server}", flush=True)
            ctx = Context(web, timeout, server_cpu, seeds)
            rs = crawl_runs(ctx, root / preset, ["tarantula"], args.runs, args.keep)
        for r in rs:
            r.crawler = f"tarantula ({preset})"
            r.notes += notes
        results += rs
        header.append(
            f"- `{preset}`: {len(web.urls)} URLs, {int(web.manifest['bytes']) / 1e6:.0f} MB"
        )
        shutil.rmtree(root / preset / "web", ignore_errors=True)
    header += [
        f"- server: {server_desc}",
        f"- Tarantula: threads {CONCURRENCY}, host-concurrency {CONCURRENCY}, delay 0, domain-scope",
        *machine_lines(),
        f"- command: `python -m bench.run {' '.join(args.argv)}`",
    ]
    by = [m.result for m in medians(results)]
    extra = ["## Memory", ""]
    a = by[0]
    for b in by[1:]:
        extra.append(
            f"- peak RSS {b.crawler} / {a.crawler} = {b.rss_mb:.0f} / {a.rss_mb:.0f} MB = "
            f"{b.rss_mb / a.rss_mb:.2f} (pages {b.pages / a.pages if a.pages else float('nan'):.1f}x)"
        )
    text = report("Tarantula memory", header, results, args.runs, extra)
    path = write_report(text, "memory", args.results_dir)
    return text + f"\n(written to {path})\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description="Timed crawls of a generated web on 127.0.0.1."
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--runs", type=int, default=3, help="runs of each crawler [3]")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the web [1]")
    parser.add_argument("--wget", action="store_true", help="also run GNU wget --recursive")
    parser.add_argument(
        "--no-nginx",
        action="store_true",
        help="serve with the asyncio server (0 ms) instead of nginx",
    )
    parser.add_argument(
        "--delay-ms", type=float, help="serve with the asyncio server, this delay per answer"
    )
    parser.add_argument(
        "--crawlers",
        type=lambda s: [c for c in s.split(",") if c],
        help=f"comma-separated subset of {','.join(CRAWLERS)}",
    )
    parser.add_argument("--memory", action="store_true", help="Tarantula's peak RSS on two presets")
    parser.add_argument(
        "--memory-presets",
        type=lambda s: s.split(","),
        default=["small", "large"],
        help="presets for --memory [small,large]",
    )
    parser.add_argument(
        "--single-seed",
        action="store_true",
        help="give Tarantula only the web's seed (domain-scope then keeps it on h00.bench.test)",
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds per crawl [300 + URLs x (0.05 + delay)]"
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also run Tarantula as of git revision REV (from a worktree), beside today's",
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument(
        "--keep", action="store_true", help="keep the work folder (web, mirrors, logs)"
    )
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    for crawler in args.crawlers or []:
        if crawler not in CRAWLERS:
            parser.error(f"unknown crawler {crawler!r}; choose from {', '.join(CRAWLERS)}")
    for preset in args.memory_presets:
        if preset not in PRESETS:
            parser.error(f"unknown preset {preset!r}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: the crawler is killed, the server stopped


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    root = Path(tempfile.mkdtemp(prefix="tarantula-bench-"))
    try:
        text = memory(args, root) if args.memory else benchmark(args, root)
    except KeyboardInterrupt:
        print("\ninterrupted: crawler and server stopped", file=sys.stderr, flush=True)
        return 130
    finally:
        if args.keep:
            print(f"work folder kept: {root}", flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print()
    print(text, end="", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
