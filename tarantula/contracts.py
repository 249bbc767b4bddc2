"""Spider contracts that run against the bundled demo site, so ``scrapy check tarantula`` needs no
network beyond 127.0.0.1.

``@demo PATH`` serves the demo site (:mod:`tarantula.demo.server`) on a free 127.0.0.1 port, once per
process, and points the contract's request at ``http://www.demo.test:PORT/PATH``. Scrapy's own
``@url`` takes a literal URL, which cannot know that port.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from scrapy.contracts import Contract

from tarantula.core.config import CrawlConfig
from tarantula.demo.server import SiteServer

DEMO_SITE = Path(__file__).parent / "demo" / "site"
DEMO_HOST = "www.demo.test"
DEMO_RESOLVE = (("*.demo.test", "127.0.0.1"), ("elsewhere.test", "127.0.0.1"))

_server: SiteServer | None = None


def demo_server() -> SiteServer:
    """The process's demo-site server, started on first use."""
    global _server
    if _server is None:
        _server = SiteServer(root=DEMO_SITE).start()
    return _server


def check_config() -> CrawlConfig:
    """The configuration ``scrapy check`` uses without ``-a conf``: the demo site, offline."""
    return CrawlConfig(
        path=DEMO_SITE / "check.conf",
        starting_points=(f"http://{DEMO_HOST}/",),
        scope="domain-scope",
        repository=Path(tempfile.gettempdir()) / "tarantula-check",
        delay=0.0,
        resolve=DEMO_RESOLVE,
        resolve_only=True,
    )


class DemoContract(Contract):
    """``@demo /path``: request that path of the demo site's main host."""

    name = "demo"

    def adjust_request_args(self, args: dict[str, Any]) -> dict[str, Any]:
        args["url"] = demo_server().url(DEMO_HOST, self.args[0] if self.args else "/")
        return args
