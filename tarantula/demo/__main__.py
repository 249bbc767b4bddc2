"""``python -m tarantula.demo run``: serve the demo site on 127.0.0.1 and crawl it end to end.

``python -m tarantula.demo serve`` only serves it (Ctrl-C stops), for crawls run by hand.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from tarantula.contracts import DEMO_SITE
from tarantula.core.config import load_config
from tarantula.core.repository import Repository
from tarantula.demo.server import SiteServer

PROJECT = Path(__file__).resolve().parents[2]
DEMO_CONF = PROJECT / "conf" / "demo.conf"
DEMO_PORT = 8642


def run(conf: Path) -> int:
    config = load_config(conf)
    with SiteServer(root=DEMO_SITE, port=DEMO_PORT):
        print(f"Serving the demo site on 127.0.0.1:{DEMO_PORT}; crawling with {conf}", flush=True)
        command = [sys.executable, "-m", "scrapy", "crawl", "tarantula", "-a", f"conf={conf}"]
        status = subprocess.run(command, cwd=PROJECT).returncode
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
    args = parser.parse_args(argv)
    if args.action == "serve":
        with SiteServer(root=DEMO_SITE, port=DEMO_PORT):
            print(f"Serving {DEMO_SITE} on 127.0.0.1:{DEMO_PORT} (Ctrl-C stops)", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
        return 0
    return run(args.conf)


if __name__ == "__main__":
    sys.exit(main())
