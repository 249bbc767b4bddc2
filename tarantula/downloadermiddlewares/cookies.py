"""Cookies for a logged-in crawl (SPEC 13 ``cookies``): Scrapy's cookie jar (the standard
library's :class:`http.cookiejar.CookieJar`: domain, path, ``Secure`` and expiry as a browser keeps
them), started from the configuration's Netscape cookie file and kept in the crawl's state, so a
resume goes on with the cookies the servers set.

A crawl without ``<authentication-options>`` keeps no cookies, as a crawler of the open web should
(``COOKIES_ENABLED`` is off); one with ``netrc`` or ``cookies`` keeps them. The jar is written to
``.tarantula/cookies`` (the owner's alone, compressed: a grep of the repository does not show a
session's value; no output carries it, see :func:`tarantula.core.credentials.redact`) at most
once a :data:`SAVE_EVERY` seconds while servers set cookies, and when the crawl closes.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
import zlib
from http.cookiejar import LoadError, MozillaCookieJar
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.downloadermiddlewares.cookies import CookiesMiddleware
from scrapy.exceptions import NotConfigured

from tarantula.compat import offline_public_suffixes
from tarantula.context import context_of
from tarantula.core.credentials import read_cookies
from tarantula.core.layout import STATE_FOLDER

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: Seconds between two writes of the jar while servers set cookies.
SAVE_EVERY = 1.0
COOKIES_NAME = "cookies"


class CookieFileMiddleware(CookiesMiddleware):
    """See the module's docstring."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = context_of(crawler).config
        if not config.logged_in:
            raise NotConfigured
        offline_public_suffixes()
        middleware = cls(crawler.settings.getbool("COOKIES_DEBUG"))
        middleware.crawler = crawler
        middleware.kept = config.repository / STATE_FOLDER / COOKIES_NAME
        middleware.changed = False
        middleware.saved = time.monotonic()
        middleware.start(config.cookies)
        crawler.signals.connect(middleware.save, signal=signals.spider_closed)
        return middleware

    kept: Path
    changed: bool
    saved: float

    def start(self, cookie_file: Path | None) -> None:
        """Fill the jar: the cookie file's cookies, then those the crawl kept (a resume's)."""
        jar = self.jars[None].jar
        if cookie_file is not None:
            for cookie in read_cookies(cookie_file):
                jar.set_cookie(cookie)
        if self.kept.is_file():
            try:
                text = zlib.decompress(self.kept.read_bytes()).decode("utf-8")
                with tempfile.NamedTemporaryFile("w", encoding="utf-8") as copy:
                    copy.write(text)
                    copy.flush()
                    kept = MozillaCookieJar(copy.name)
                    kept.load(ignore_discard=True, ignore_expires=True)
            except (OSError, zlib.error, LoadError, UnicodeDecodeError) as exc:
                logger.warning(
                    "The cookies kept in %s cannot be read (%s): not used", self.kept, exc
                )
                return
            for cookie in kept:
                jar.set_cookie(cookie)

    def process_response(self, request: Request, response: Response,
                         spider: Spider | None = None) -> Request | Response:  # fmt: skip
        answer = super().process_response(request, response)
        if b"Set-Cookie" in response.headers:
            self.changed = True
            if time.monotonic() - self.saved >= SAVE_EVERY:
                self.save()
        return answer

    def save(self) -> None:
        """Write the jar to the crawl's state (atomically, the owner's alone)."""
        if not self.changed:
            return
        self.kept.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as folder:
            plain = MozillaCookieJar(str(Path(folder) / "cookies.txt"))
            for cookie in self.jars[None].jar:
                plain.set_cookie(cookie)
            plain.save(ignore_discard=True, ignore_expires=True)
            data = zlib.compress(Path(plain.filename or "").read_bytes())
        partial = self.kept.with_name(self.kept.name + ".partial")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(partial, self.kept)
        self.changed, self.saved = False, time.monotonic()
