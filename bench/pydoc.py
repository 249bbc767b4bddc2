"""A browsable copy of a real site: Tarantula (``browsable = yes``, page requisites on) against
``wget --mirror --page-requisites --convert-links`` on Debian's Python 3.11 documentation.

    python -m bench.pydoc --runs 3
    python -m bench.pydoc --runs 3 --kinds plain,browse-warc   # each output's cost on a real site
    python -m bench.pydoc --runs 3 --kinds plain,browse-warc --site django   # python-django-doc's

The documentation (``python3.11-doc``) is copied with its symbolic links followed (its
``_static/jquery.js`` and ``underscore.js`` are links into ``/usr/share/javascript``) and served
from 127.0.0.1 by the project's recording server; both crawlers use one connection, no delay.
Each run reports wall time, CPU seconds, the documents and requisites each kept, what
``scrapy verify`` says of Tarantula's ``browse/`` (pages that would reach the network when opened
included), and how many of wget's converted pages still load something from the network. With
``--screenshot`` (needs the playwright extra and Debian's chromium), ``library/os.html`` is
opened online and from ``browse/`` with the network unreachable, and the two screenshots are
compared. With ``--kinds``, Tarantula runs once a round per kind: ``browse`` (the default:
``browsable``), ``plain`` (no output but the mirror and the index), ``browse-warc`` (``browsable``
and ``warc``), ``requisites`` (``page-requisites`` alone), ``warc`` (``warc``, with the page
requisites it turns on) and ``near-off`` (``plain`` with ``near-duplicates = off``). Medians are
printed as a Markdown table.

``--delay`` sets the crawls' ``delay`` (0 by default), and ``--redis URL`` shares each Tarantula
crawl through that Redis database (emptied before each crawl) among ``--workers`` workers (1 by
default), started at once. A shared crawl at a polite delay against one process, side by side:

    python -m bench.pydoc --runs 2 --kinds browse-warc --delay 0.1
    python -m bench.pydoc --runs 2 --kinds browse-warc --delay 0.1 --redis redis://127.0.0.1:6391/0
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.measure import PROJECT, measure
from bench.shared import crawl_command, workers_command
from tarantula.core.browse import network_loads
from tarantula.demo.server import SiteServer

PYDOC = Path("/usr/share/doc/python3.11/html")
HOST = "docs.python.test"
#: The sites ``--site`` names: Debian's documentation folder, and the host it is served as.
SITES = {
    "python": (PYDOC, HOST),
    "django": (Path("/usr/share/doc/python-django-doc/html"), "docs.django.test"),
}
CONF = """<crawler-options>
starting-points = "http://{host}:{port}/index.html";
scope = host-scope;
repository = "repo";
delay = {delay};
host-concurrency = 1;
max-depth = 0;
{crawler}
resolve = {{ "*.test=127.0.0.1" }};
resolve-only = yes;
<logging>
log-file = "log";
log-level = 1;
<multithreading-options>
threads = 8;
<output-options>
{outputs}
{shared}"""

#: The ``<output-options>`` of each kind of Tarantula crawl (``--kinds``).
KINDS = {
    "browse": "browsable = yes;",
    "plain": "browsable = no;",
    "browse-warc": "browsable = yes;\nwarc = yes;",
    "requisites": "browsable = no;\npage-requisites = yes;",
    "warc": "browsable = no;\nwarc = yes;",
    "near-off": "browsable = no;",
}
#: What a kind adds to ``<crawler-options>``: ``near-off`` is ``plain`` without the near-duplicate
#: fingerprints (``near-duplicates = mark`` is the default), to measure their cost.
CRAWLER = {"near-off": "near-duplicates = off;"}


def tarantula(folder: Path, port: int, kind: str = "browse", delay: float = 0, redis: str = "",
              workers: int = 1, host: str = HOST) -> dict[str, object]:  # fmt: skip
    """One crawl of the site served as ``host`` (``redis``: shared through it by ``workers``
    workers) and what it kept."""
    folder.mkdir(parents=True)
    conf = folder / "crawl.conf"
    shared = f'<distributed-options>\nredis = "{redis}";\n' if redis else ""
    conf.write_text(CONF.format(host=host, port=port, outputs=KINDS[kind], delay=delay,
                                crawler=CRAWLER.get(kind, ""), shared=shared), encoding="utf-8")  # fmt: skip
    if redis:  # a fresh crawl each run: the runs' crawl ids are the same
        from redis import Redis

        Redis.from_url(redis).flushdb()
    command = workers_command(conf, workers) if redis else crawl_command(conf)
    m = measure(command, PROJECT, folder / "crawl.out", 600)
    verify = subprocess.run([sys.executable, "-m", "scrapy", "verify", str(conf)], cwd=PROJECT,
                            capture_output=True, text=True)  # fmt: skip
    network = sum("reaches the network" in line for line in verify.stdout.splitlines())
    logs = (
        [folder / "log"]
        if not redis
        else [conf.parent / f"w{n}.log" for n in range(1, workers + 1)]
    )
    log = "".join(path.read_text(encoding="utf-8") for path in logs)
    index = (folder / "repo" / "index.txt").read_text(encoding="utf-8").splitlines()
    return {
        "wall": m.wall, "cpu": m.cpu, "status": m.status,
        "documents": sum(1 for line in index if not line.startswith("\t")),
        "requisites": log.count("Stored page requisite "),
        "problems": len(verify.stdout.splitlines()), "network": network,
        "verify": verify.stderr.strip().splitlines()[-1] if verify.stderr.strip() else "",
    }  # fmt: skip


def wget(folder: Path, port: int, host: str = HOST) -> dict[str, object]:
    folder.mkdir(parents=True)
    command = ["wget", "--no-config", "--mirror", "--page-requisites", "--convert-links",
               "--adjust-extension",
               "--no-verbose", "-e", "use_proxy=yes", "-e", f"http_proxy=127.0.0.1:{port}",
               "-P", str(folder / "mirror"), "-o", str(folder / "wget.log"),
               f"http://{host}/index.html"]  # fmt: skip
    m = measure(command, folder, folder / "wget.out", 600)
    site = folder / "mirror" / host
    files = [p for p in site.rglob("*") if p.is_file()]
    pages = [p for p in files if p.suffix == ".html"]
    network = sum(
        bool(network_loads(p.read_text(encoding="utf-8", errors="replace"))) for p in pages
    )
    return {
        "wall": m.wall, "cpu": m.cpu, "status": m.status, "documents": len(pages),
        "requisites": len(files) - len(pages), "problems": "-", "network": network, "verify": "",
    }  # fmt: skip


def screenshots(port: int, browse: Path, mirror: Path) -> tuple[bool, bool]:
    """Whether ``library/os.html`` looks the same online and from disk with the network
    unreachable: Tarantula's ``browse/`` copy, and wget's converted copy."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"),
                                             args=["--host-resolver-rules=MAP *.test 127.0.0.1"])  # fmt: skip
        shots = []
        for url in (f"http://{HOST}:{port}/library/os.html",
                    (browse / f"{HOST}:{port}/library/os.html").as_uri(),
                    (mirror / HOST / "library/os.html").as_uri()):  # fmt: skip
            context = browser.new_context(viewport={"width": 1000, "height": 800})
            if url.startswith("file:"):
                context.route("**/*", lambda route, request: route.continue_()
                              if request.url.startswith("file:") else route.abort())  # fmt: skip
            tab = context.new_page()
            tab.goto(url, wait_until="networkidle")
            shots.append(tab.screenshot())
            context.close()
        browser.close()
    return shots[0] == shots[1], shots[0] == shots[2]


def _median(results: list[dict[str, object]], key: str) -> float:
    return statistics.median(float(r[key]) for r in results)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--screenshot", action="store_true")
    parser.add_argument("--kinds", default="browse",
                        help="Tarantula's crawls, by commas: " + ", ".join(KINDS))  # fmt: skip
    parser.add_argument("--delay", type=float, default=0.0, help="the crawls' delay, seconds")
    parser.add_argument(
        "--redis",
        default="",
        help="share Tarantula's crawls through this Redis database (emptied first)",
    )
    parser.add_argument("--workers", type=int, default=1, help="with --redis: workers a crawl")
    parser.add_argument("--site", choices=SITES, default="python",
                        help="Debian's documentation to crawl: python3.11-doc or python-django-doc")  # fmt: skip
    args = parser.parse_args()
    docs, host = SITES[args.site]
    if not docs.is_dir():
        parser.error(f"--site {args.site}: {docs} is not there (install its Debian package)")
    if args.screenshot and args.site != "python":
        parser.error("--screenshot: of the Python documentation only (library/os.html)")
    kinds = args.kinds.split(",")
    if unknown := set(kinds) - set(KINDS):
        parser.error(f"--kinds: unknown {', '.join(sorted(unknown))} (known: {', '.join(KINDS)})")
    names = {kind: "tarantula" if kind == "browse" else f"tarantula-{kind}" for kind in kinds}
    with tempfile.TemporaryDirectory(prefix="tarantula-pydoc-") as tmp:
        root = Path(tmp) / "site"
        shutil.copytree(docs, root / host, symlinks=False)
        rows: dict[str, list[dict[str, object]]] = {name: [] for name in [*names.values(), "wget"]}
        with SiteServer(root=root) as server:
            for run in range(args.runs):
                for kind, name in names.items():
                    rows[name].append(
                        tarantula(
                            Path(tmp) / kind / str(run),
                            server.port,
                            kind,
                            args.delay,
                            args.redis,
                            args.workers,
                            host,
                        )
                    )
                    print(run, name, rows[name][-1], flush=True)
                rows["wget"].append(wget(Path(tmp) / f"w{run}", server.port, host))
                print(run, "wget", rows["wget"][-1], flush=True)
            browsed = next((kind for kind in kinds if kind != "plain"), None)
            if args.screenshot and browsed is not None:
                with ThreadPoolExecutor(1) as thread:
                    same = thread.submit(screenshots, server.port, Path(tmp) / browsed / "0/repo/browse",
                                         Path(tmp) / "w0/mirror")  # fmt: skip
                    ours, theirs = same.result()
                    print("library/os.html offline looks as online: Tarantula's browse/ copy",
                          ours, "- wget's converted copy", theirs)  # fmt: skip
    print(
        "| crawler | wall s | CPU s | pages | requisites | verify problems | pages reaching the network |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, results in rows.items():
        last = results[-1]
        print(f"| {name} | {_median(results, 'wall'):.1f} | {_median(results, 'cpu'):.2f} | {last['documents']} "
              f"| {last['requisites']} | {last['problems']} | {last['network']} |")  # fmt: skip
    for name in names.values():
        print(name, rows[name][-1]["verify"])


if __name__ == "__main__":
    main()
