"""Cookies for a logged-in crawl (SPEC 13 ``cookies``): Scrapy's cookie jar (the standard
library's :class:`http.cookiejar.CookieJar`: domain, path, ``Secure`` and expiry as a browser keeps
them), started from the configuration's Netscape cookie file and kept in the crawl's store
(:class:`~tarantula.store.CookieStore`), so that a resume goes on with the cookies the servers set,
and the workers of a shared crawl (or the processes of a crawl on N) with one another's.

A crawl without ``<authentication-options>`` keeps no cookies, as a crawler of the open web should
(``COOKIES_ENABLED`` is off); a logged-in one keeps them. The cookies an answer changed go to the
store with it (in one process, with the crawl's next commit), and those other workers kept are
read back at most once a :data:`READ_EVERY` seconds, before a request. The store keeps each cookie's line
compressed: a grep of the repository does not show a session's value, and no output carries it
(:func:`tarantula.core.credentials.redact`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.cookies import CookiesMiddleware
from scrapy.exceptions import NotConfigured

from tarantula.compat import offline_public_suffixes
from tarantula.context import context_of
from tarantula.core.credentials import cookie_line, line_cookie, read_cookies

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from tarantula.store import CookieStore

logger = logging.getLogger(__name__)

#: Seconds between two reads of the cookies other workers kept.
READ_EVERY = 1.0


class CookieFileMiddleware(CookiesMiddleware):
    """See the module's docstring."""

    store: CookieStore
    read_at: float
    seen: dict[str, bytes]  # the store's cookies as last read or written

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        context = context_of(crawler)
        config = context.config
        if not config.logged_in:
            raise NotConfigured
        offline_public_suffixes()
        middleware = cls(crawler.settings.getbool("COOKIES_DEBUG"))
        middleware.crawler = crawler
        middleware.store = context.store.cookies
        middleware.read_at, middleware.seen = time.monotonic(), {}
        jar = middleware.jars[None].jar
        if config.cookies is not None:
            for cookie in read_cookies(config.cookies):
                jar.set_cookie(cookie)
        middleware.read()  # a resume's, or the other workers'
        middleware.write()  # the cookie file's, for the other workers and a resume
        return middleware

    def read(self) -> None:
        """Take the cookies the store has that this jar has not seen (another worker's)."""
        kept = self.store.all()
        jar = self.jars[None].jar
        for key, line in kept.items():
            if self.seen.get(key) != line:
                jar.set_cookie(line_cookie(line))
        self.seen = kept

    def write(self) -> None:
        """Give the store the cookies of this jar that changed (a removed one as empty)."""
        mine = dict(cookie_line(cookie) for cookie in self.jars[None].jar)
        changed = {key: line for key, line in mine.items() if self.seen.get(key) != line}
        changed |= {key: b"" for key in self.seen.keys() - mine.keys()}
        if changed:
            self.store.put(changed)
        self.seen = mine

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        now = time.monotonic()
        if now - self.read_at >= READ_EVERY:
            self.read()
            self.read_at = now
        super().process_request(request)

    def process_response(self, request: Request, response: Response,
                         spider: Spider | None = None) -> Request | Response:  # fmt: skip
        answer = super().process_response(request, response)
        if b"Set-Cookie" in response.headers:
            self.write()
        return answer
