"""A form login (SPEC 13 ``login-url``, ``login-fields``, ``logged-in-text``): before the crawl, and
again whenever the session is lost.

The crawl asks for the page at ``login-url``, fills its form (the one with a password field, else
the first), whose hidden fields (a CSRF token among them) are kept as served, with ``login-fields``
(``$NAME`` values from the environment), and submits it as a browser would, built by
``form2request`` (Scrapy's ``FormRequest.from_response`` is deprecated for it). A form that
would send its fields in the URL (``method="get"``) is refused: the password would be in every log
line and archive that names the URL. The WARC keeps the login's request with its values
``[redacted]``. The cookies the site sets are the crawl's session
(:mod:`tarantula.downloadermiddlewares.cookies`). While a login is under way the scheduler hands out
no other URL (:meth:`Login.holds`); the login's requests go before the frontier's, under
robots.txt and politeness as any (the politeness middleware books their start on the wire).

A page shows a lost session (:meth:`Login.lost`) when a redirect took it to ``login-url``, when it
is the login form (a form with a password field), or when it lacks ``logged-in-text``. Such a page
is not stored: the crawl logs in again, once, and asks for the page again. If a login fails (its
answer is still the form, or lacks ``logged-in-text``), the crawl stops with one line saying so
(finish reason ``login-failed``, exit status 1), and no login page is stored as a document.

Stats: ``tarantula/login/done`` (logins that worked), ``tarantula/login/lost`` (pages that
showed a lost session).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from form2request import form2request
from scrapy import Request
from scrapy.http import TextResponse
from scrapy.utils.defer import deferred_from_coro

from tarantula import meta
from tarantula.core.scope import origin
from tarantula.core.urls import UrlRejected, join_url

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

    from tarantula.context import CrawlContext

logger = logging.getLogger(__name__)

#: A form with a password field: the login form, wherever it is served.
_PASSWORD_FIELD = re.compile(rb"<input\b[^>]*\btype\s*=\s*[\"']?password", re.IGNORECASE)


class Login:
    """The crawl's form login (see the module's docstring)."""

    def __init__(self, context: CrawlContext, crawler: Crawler) -> None:
        self.context = context
        self.crawler = crawler
        config = context.config
        self.url = context.rules.normalize(config.login_url)
        self.text = config.logged_in_text.encode("utf-8") if config.logged_in_text else b""
        self.pending = False  # a login under way: the scheduler holds the frontier's URLs
        self.waiting: list[Request] = []  # pages to ask for again once logged in
        self.asked_again: set[str] = set()  # pages asked for again after a lost session
        self.host = origin(self.url).host

    def holds(self) -> bool:
        """Whether the frontier's URLs wait (a login is under way)."""
        return self.pending

    def lost(self, response: Response) -> bool:
        """Whether ``response`` shows the session lost (see the module's docstring): only a page
        of the login's host can (another host's pages never show its logged-in text)."""
        if response.meta.get(meta.LOGIN) or origin(response.url).host != self.host:
            return False
        if self.context.rules.normalize(response.url) == self.url:
            return True
        if not (response.headers.get(b"Content-Type") or b"").lower().startswith(b"text/html"):
            return False
        body = response.body
        if _PASSWORD_FIELD.search(body):
            return True
        return bool(self.text) and self.text not in body

    def again(self, url: str) -> bool:
        """Whether ``url``, a page that showed the session lost, may be asked for again after a
        new login: once; a second time, the crawl stops (the login does not hold)."""
        if url in self.asked_again:
            self._fail(f"{url} showed the session lost again after a new login")
            return False
        self.asked_again.add(url)
        return True

    def redirected(self, request: Request, target: str) -> Request | None:
        """A redirect of ``request`` to ``target``: when it leads to the login page (the session
        lost; not the login's own requests), what to do instead: log in again and ask for the
        page again (:meth:`relog`). None for any other redirect, which is followed."""
        if request.meta.get(meta.LOGIN):
            return None
        try:
            if self.context.rules.normalize(join_url(request.url, target)) != self.url:
                return None
        except UrlRejected:
            return None
        self.crawler.stats.inc_value("tarantula/login/lost")
        url = request.meta.get(meta.URL) or request.url
        return self.relog(url, request.replace(dont_filter=True))

    def relog(self, url: str, again: Request) -> Request | None:
        """The session was lost at ``url``: the request that logs in again, ``again`` to follow
        it; or ``again`` alone while a login is under way (the frontier's URLs wait for it). A
        page lost a second time stops the crawl (None)."""
        if not self.again(url):
            return None
        logger.info("The session was lost at %s: logging in again", url)
        if self.pending:
            return again
        return self.start([again])

    def start(self, then: list[Request]) -> Request | None:
        """The login's first request, the ``then`` requests to follow once it worked; None while
        another login is under way (they wait for it)."""
        self.waiting += then
        if self.pending:
            return None
        self.pending = True
        return Request(self.url, callback=self.form, errback=self.failed, dont_filter=True,
                       meta={meta.LOGIN: True, meta.URL: self.url, "depth": 0})  # fmt: skip

    def form(self, response: Response) -> Iterator[Request]:
        """The login page: its form, filled and sent."""
        if not isinstance(response, TextResponse):
            self._fail(f"{response.url} is no page with a form")
            return
        values = self.context.config.login_values()
        # The form with a password field, else the first.
        forms = response.xpath('//form[.//input[@type="password"]]') or response.xpath("//form")
        if not forms:
            self._fail(f"no login form at {self.url}")
            return
        try:  # the form as a browser sends it: its hidden fields (a CSRF token) and its button
            sent = form2request(forms[0], values)
        except (ValueError, NotImplementedError) as exc:  # a form no browser could send either
            self._fail(f"the login form at {self.url} cannot be sent ({exc})")
            return
        if sent.method != "POST":  # its fields, the password among them, would be in the URL
            self._fail(f"the login form at {self.url} sends its fields in the URL (method "
                       f"{sent.method}), where logs and archives would keep the password")  # fmt: skip
            return
        yield sent.to_scrapy(self.answered, errback=self.failed, dont_filter=True,
                             meta={meta.LOGIN: True, meta.URL: self.context.rules.normalize(sent.url),
                                   "depth": 0})  # fmt: skip

    def answered(self, response: Response) -> Iterator[Request]:
        """The form's answer: logged in, or the crawl stops."""
        if _PASSWORD_FIELD.search(response.body) or (self.text and self.text not in response.body):
            self._fail(
                f"the form at {self.url} came back, or {response.url} lacks the logged-in text"
            )
            return
        self.crawler.stats.inc_value("tarantula/login/done")
        logger.info("Logged in at %s", self.url)
        self.pending = False
        then, self.waiting = self.waiting, []
        yield from then

    def failed(self, failure: Failure) -> None:
        self._fail(f"{failure.getErrorMessage()}")

    def _fail(self, why: str) -> None:
        logger.warning("Login failed, the crawl stops: %s; no login page is stored", why)
        self.pending = True  # the frontier's URLs stay held while the crawl closes
        engine = self.crawler.engine
        if engine is not None:
            self.crawler.stats.set_value("tarantula/login/failed", why)
            deferred_from_coro(engine.close_spider_async(reason="login-failed"))
