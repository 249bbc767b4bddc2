"""Pages that build their links with JavaScript, rendered in headless Chromium through
scrapy-playwright (SPEC 10). Off unless the configuration has a ``render-list``.

A page to render is first downloaded like any other (scope, robots.txt, politeness, redirects
checked by the crawl's rules, ``max-document-size``, conditional requests in a recrawl). When its
final response is an HTML 200, this middleware has the browser render it: scrapy-playwright's
download handler opens a page, the page's own document is served to the browser from the response
already downloaded (so it is fetched once, and the browser follows no redirect), its scripts run
until the network has been idle for half a second (at most ``render-wait`` seconds after the
``load`` event), and the response goes on to the spider with the rendered document as its body.

Why a middleware and not only scrapy-playwright's handler: with the handler alone the browser
downloads the page itself, and Playwright cannot intercept the redirects it follows, so a page
could redirect the browser out of scope, and robots.txt and ``max-document-size`` would not apply.

What the browser still fetches itself: the scripts, style sheets and XHR the page asks for (the
links depend on them); never images, media or fonts, and never another page (a script that
navigates away is stopped, frames stay empty). It resolves host names with the crawl's own mapping (``resolve``,
``resolve-only``) through ``--host-resolver-rules``: under ``resolve-only`` an unmapped name
fails at once, with no DNS query. Chromium's Local Network Access rules stay on (a rendered public
page cannot reach loopback or private addresses) unless ``resolve`` maps a name to such an
address: then the crawl is of local servers on purpose, and their pages may load their scripts.

If rendering fails (the browser cannot start or crashed, a timeout, a script that navigates away),
the page is kept as served, and the failure is logged and counted. Stats:
``tarantula/pages/rendered``, ``tarantula/render/failed``, and scrapy-playwright's ``playwright/*``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.http import HtmlResponse

from tarantula.compat import download_through_handlers
from tarantula.context import context_of
from tarantula.meta import DOWNLOADED, PAGE, RENDER, URL
from tarantula.resolver import host_resolver_rules

if TYPE_CHECKING:
    from playwright.async_api import Page, Route
    from playwright.async_api import Request as BrowserRequest
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from tarantula.core.config import CrawlConfig

logger = logging.getLogger(__name__)

HANDLER = "tarantula.handlers.render.RenderHandler"
#: What a page needs for its links; images, media and fonts only cost time.
SKIPPED_RESOURCES = frozenset({"image", "media", "font"})


def render_settings(config: CrawlConfig, mapping: Mapping[str, str], only: bool) -> dict[str, Any]:
    """The Scrapy settings of a crawl that renders pages (an empty dict when it renders none).

    scrapy-playwright's handler takes http and https, and passes every request that is not marked
    ``meta["playwright"]`` (all but the renderings) to Scrapy's own HTTP handler.
    """
    if not config.render_list:
        return {}
    args = ["--disable-gpu", "--disable-dev-shm-usage"]
    rules = host_resolver_rules(mapping, only)
    if rules:
        args.append(f"--host-resolver-rules={rules}")
    if any(ipaddress.ip_address(address.strip("[]")).is_private for address in mapping.values()):
        # A document served from the downloaded response has no address, so Chromium counts it
        # as public and, by its Local Network Access rules, refuses it anything on loopback or a
        # private network. Names the configuration maps there are local on purpose.
        args.append("--disable-features=LocalNetworkAccessChecks")
    return {
        "DOWNLOAD_HANDLERS": {"http": HANDLER, "https": HANDLER},
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": {
            "executable_path": shutil.which(config.browser),
            "headless": True,
            "args": args,
        },
        # `threads` bounds the downloads, renderings included, so one context holds them all.
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": config.threads,
        "PLAYWRIGHT_ABORT_REQUEST": refused_by_browser,
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": (config.render_wait + 30) * 1000,
    }


def refused_by_browser(request: BrowserRequest) -> bool:
    """``PLAYWRIGHT_ABORT_REQUEST``: images, media, fonts, and every other document: the page
    navigating away, or the pages of its frames, whose links a rendering does not take (the page's
    own document never gets here: :func:`serve_downloaded` answers it first)."""
    return request.is_navigation_request() or request.resource_type in SKIPPED_RESOURCES


async def serve_downloaded(page: Page, request: Request) -> None:
    """``playwright_page_init_callback``: answer the browser's request for the page with the
    response already downloaded. Routes added later take precedence in Playwright, so this one
    comes before scrapy-playwright's own."""
    status, headers, body = request.meta[DOWNLOADED]
    request.meta[PAGE] = page  # closed by the middleware if the rendering hangs
    url = request.url
    context = page.context
    if not getattr(context, "tarantula_guarded", False):
        # Pages the crawl did not open (pop-ups from window.open) have no route of their own, so
        # they meet this one: they load nothing, and are closed at once.
        await context.route("**", lambda route: route.abort())
        context.tarantula_guarded = True  # type: ignore[attr-defined]
    page.on("popup", lambda popup: asyncio.ensure_future(popup.close()))
    await context.clear_cookies()  # a crawler keeps no session state (COOKIES_ENABLED = False)

    async def fulfill(route: Route) -> None:
        await route.fulfill(status=status, headers=headers, body=body)

    await page.route(lambda requested: requested.split("#")[0] == url, fulfill, times=1)


async def settle(page: Page, limit: float) -> None:
    """Wait until the page's network has been idle for half a second, or ``limit`` seconds have
    passed: a page that polls forever is taken as it is then, not dropped."""
    if limit > 0:
        with contextlib.suppress(Exception):  # Playwright's TimeoutError: the page never settled
            await page.wait_for_load_state("networkidle", timeout=limit * 1000)


class RenderMiddleware:
    def __init__(self, crawler: Crawler, grace: float) -> None:
        self.crawler = crawler
        self.grace = grace

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        context_of(crawler)  # a Tarantula crawl only
        return cls(crawler, crawler.settings.getfloat("TARANTULA_RENDER_GRACE"))

    async def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        if (
            not request.meta.get(RENDER)
            or response.status != 200
            or not isinstance(response, HtmlResponse)
        ):
            return response
        context = context_of(self.crawler)
        render_wait = context.config.render_wait
        stats = self.crawler.stats
        assert stats is not None
        if url := request.meta.get(URL):
            # A shared frontier's lease may expire while the browser works: it is pushed past
            # the rendering's time limit, so no other worker takes the page meanwhile (SPEC 9).
            limit = context.config.lease_timeout + render_wait * 2 + self.grace
            context.leases.extend(url, limit)
        try:
            rendered = await self._render(
                rendering_request(request, response, render_wait), render_wait
            )
        except Exception as exc:  # a browser fault must not cost the page: keep it as served
            stats.inc_value("tarantula/render/failed")
            logger.warning("Could not render %s (%s: %s); its links are taken as served",
                           response.url, type(exc).__name__, exc)  # fmt: skip
            return response
        stats.inc_value("tarantula/pages/rendered")
        # In the page's own encoding, which its copy still declares; characters scripts added
        # that it cannot hold become character references.
        text = rendered.text if isinstance(rendered, HtmlResponse) else rendered.body.decode()
        encoding = response.encoding
        body = text.encode(encoding, errors="xmlcharrefreplace")
        return response.replace(body=body, encoding=encoding, flags=[*response.flags, "rendered"])

    async def _render(self, rendering: Request, render_wait: float) -> Response:
        """The browser's rendering of a page; raises when there is none to keep."""
        assert self.crawler.engine is not None
        # A script that loops forever freezes the page, and scrapy-playwright's last read of it
        # has no time limit of its own.
        limit = render_wait * 2 + self.grace
        try:
            rendered = await asyncio.wait_for(
                download_through_handlers(self.crawler.engine, rendering), limit
            )
        except TimeoutError:
            page = rendering.meta.get(PAGE)
            if page is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(page.close(), 10)
            raise TimeoutError(f"no rendering within {limit:g} s") from None
        # Navigations away are aborted (Chromium's error page); history.pushState keeps the
        # origin, and is what single-page applications do.
        if urlsplit(rendered.url)[:2] != urlsplit(rendering.url)[:2]:
            raise RuntimeError(f"the browser left the page for {rendered.url}")
        return rendered


def rendering_request(request: Request, response: Response, render_wait: float) -> Request:
    """The request scrapy-playwright's handler renders: the page's URL, its downloaded answer to
    serve the browser (:func:`serve_downloaded`), and the wait for its scripts (:func:`settle`)."""
    from scrapy_playwright.page import PageMethod

    headers = {
        key.decode("latin-1"): b", ".join(values).decode("latin-1")
        for key, values in response.headers.items()
        if key.lower()
        not in (b"content-encoding", b"content-length", b"transfer-encoding", b"set-cookie")
    }
    return request.replace(
        url=response.url,
        meta={
            "playwright": True,
            "playwright_page_init_callback": serve_downloaded,
            "playwright_page_goto_kwargs": {"wait_until": "load"},
            "playwright_page_methods": [PageMethod(settle, render_wait)],
            DOWNLOADED: (response.status, headers, response.body),
        },
    )
