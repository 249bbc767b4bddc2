"""The benchmark's crawlers, each run as a child process against the generated web: Tarantula
(plain, with ``warc`` or ``browsable``, on two processes, the pair, workers sharing a Redis or a Redis Cluster), a
bare Scrapy spider (whole, fetch-only, fetch-only on Tarantula's lean settings) and GNU wget."""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.generate import DOMAIN
from bench.measure import BENCH, PROJECT, measure
from bench.results import Result
from bench.shared import at_once, crawl_command, run_shared
from tarantula import settings as tarantula_settings

BASELINE_SPIDER = BENCH / "baseline_spider.py"

RESOLVE = f"*.{DOMAIN}=127.0.0.1"

CONCURRENCY = 16

#: Tarantula's crawlers: the ``<output-options>`` each one turns on (SPEC 11).
TARANTULA_OUTPUTS: dict[str, tuple[str, ...]] = {
    "tarantula": (),
    "tarantula-warc": ("warc",),
    "tarantula-browse": ("browsable",),
    "tarantula-browse-warc": ("browsable", "warc"),
}

#: Tarantula on N processes of this machine (``processes = N``, no server): the number.
PROCESSES = {"tarantula-processes2": 2}

#: Tarantula sharing the crawl through a fresh Redis (bench/shared.py): the number of workers.
SHARED_WORKERS = {"tarantula-redis1": 1, "tarantula-redis2": 2}

#: The same through a Redis Cluster of three masters (the frontier spread over them by host).
CLUSTER_WORKERS = {"tarantula-cluster1": 1, "tarantula-cluster2": 2}

#: Two one-process crawls of the whole web at once, each its own: the load of two workers on
#: this machine without Redis (:func:`run_pair`).
PAIR = "tarantula-pair"

CRAWLERS = (
    *TARANTULA_OUTPUTS,
    *PROCESSES,
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
    folder: Path,
    web: Web,
    seeds: list[str],
    outputs: tuple[str, ...] = (),
    redis: str = "",
    processes: int = 1,
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
    if processes != 1:
        text += f"processes = {processes};\n"
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
        folder,
        web,
        ctx.tarantula_seeds,
        TARANTULA_OUTPUTS.get(crawler, ()),
        processes=PROCESSES.get(crawler, 1),
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


Runner = Callable[[Path, Context, int], Result]

RUNNERS: dict[str, Runner] = {
    **{
        name: functools.partial(run_tarantula, crawler=name)
        for name in (*TARANTULA_OUTPUTS, *PROCESSES)
    },
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
