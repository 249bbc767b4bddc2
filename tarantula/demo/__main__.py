"""``python -m tarantula.demo run``: serve the demo site on 127.0.0.1 and crawl it end to end.

The site is served on the port of the configuration's first starting point (8642 in
``conf/demo.conf``), so a copy of the configuration with another port and repository runs beside
it. Run again, the crawl command finds the crawl complete and says when its next recrawl is due;
the demo then says how to see the crawl again: ``make demo-again``, which runs
``python -m tarantula.demo run --fresh`` (the repository is deleted first, so a fresh crawl
follows).

``python -m tarantula.demo serve`` only serves the site (Ctrl-C stops), for crawls run by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from tarantula.contracts import DEMO_SITE
from tarantula.core.config import CrawlConfig, load_config
from tarantula.core.repository import Repository, recrawl_pending
from tarantula.demo.server import SiteServer
from tarantula.store import last_run

PROJECT = Path(__file__).resolve().parents[2]
DEMO_CONF = PROJECT / "conf" / "demo.conf"


def site_port(config: CrawlConfig) -> int:
    """The port the demo site is served on: the one the first starting point names."""
    return urlsplit(config.starting_points[0]).port or 80


def shown(path: Path) -> str:
    """``path`` relative to the project folder when it is inside it, as a user types it there."""
    path = path.resolve()
    return str(path.relative_to(PROJECT)) if path.is_relative_to(PROJECT) else str(path)


def again_command(conf: Path) -> str:
    """The command that crawls the demo again from the start, for the configuration ``conf``."""
    if conf.resolve() == DEMO_CONF:
        return "make demo-again"
    return f"make demo-again DEMO_CONF={shown(conf)}"


def remove_repository(config: CrawlConfig) -> str | None:
    """Delete the configured repository so the next crawl is a fresh one; None when done, else why
    not. Only a folder that holds a crawl state (or nothing) is deleted: a mistyped ``repository``
    key must not cost anyone another folder."""
    root = config.repository
    if not root.exists():
        return None
    if not Repository(root).state_path.exists() and any(root.iterdir()):
        return f"{root} is not a Tarantula repository (it has no crawl state); not deleting it"
    shutil.rmtree(root)
    print(f"Deleted {shown(root)}: a fresh crawl follows", flush=True)
    return None


def serving(port: int) -> SiteServer | None:
    """The demo site served on ``port``, started; None (and why, on stderr) when the port is taken."""
    server = SiteServer(root=DEMO_SITE, port=port)
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot serve the demo site on 127.0.0.1:{port}: {exc.strerror} (is another "
              "demo, or `python -m tarantula.demo serve`, running?)", file=sys.stderr)  # fmt: skip
        return None
    return server


def run(conf: Path, *, fresh: bool = False) -> int:
    config = load_config(conf)
    port = site_port(config)
    # The crawl command itself says that the crawl is complete and when the recrawl is due; this
    # only decides whether the site needs serving and whether to point at a fresh crawl.
    complete = not fresh and recrawl_pending(last_run(config), config.period) is not None
    server = None if complete else serving(port)  # first: nothing is deleted for a crawl that
    if not complete and server is None:  # could not run
        return 2
    with contextlib.ExitStack() as stack:
        if server is not None:
            stack.callback(server.stop)
        if fresh:
            refused = remove_repository(config)
            if refused:
                print(f"{conf}: error: {refused}", file=sys.stderr)
                return 2
        if server is not None:
            print(f"Serving the demo site on 127.0.0.1:{port}; crawling with {conf}", flush=True)
        command = [sys.executable, "-m", "scrapy", "crawl", "tarantula", "-a", f"conf={conf}"]
        status = subprocess.run(command, cwd=PROJECT).returncode
    if complete:
        print(f"To see the demo crawl again now, from the start: {again_command(conf)} "
              f"(it deletes {shown(config.repository)} first).")  # fmt: skip
    index = Repository(config.repository).index
    if index.exists():
        lines = index.read_text(encoding="utf-8").splitlines()
        print(
            f"\nMirror: {config.repository}/\nIndex:  {index} ({len(lines)} lines); its first lines:"
        )
        print("\n".join(lines[:8]))
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tarantula.demo")
    parser.add_argument("action", choices=["run", "serve"])
    parser.add_argument("--conf", type=Path, default=DEMO_CONF)
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="run: delete the configuration's repository first, so the crawl starts afresh",
    )
    args = parser.parse_args(argv)
    if args.action == "serve":
        port = site_port(load_config(args.conf))
        server = serving(port)
        if server is None:
            return 2
        with contextlib.ExitStack() as stack:
            stack.callback(server.stop)
            print(f"Serving {DEMO_SITE} on 127.0.0.1:{port} (Ctrl-C stops)", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
        return 0
    return run(args.conf, fresh=args.fresh)


if __name__ == "__main__":
    sys.exit(main())
