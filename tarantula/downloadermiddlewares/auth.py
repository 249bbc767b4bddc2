"""HTTP authentication from a netrc file (SPEC 13 ``netrc``): Basic and Digest, per host and
port, answered on a server's ``401`` challenge and then sent with that origin's requests.

Credentials go to no one else. They are sent only to an origin (scheme, host, port) that asked
for them with a challenge, and whose host the netrc names (its ``machine`` or ``default`` line),
then with its requests in the challenged URL's folder and below (the protection space a browser
assumes, RFC 7617): a Basic area and a Digest area of one site each get their own answer. A host
a seed names over HTTPS gets them over HTTPS only. Every other request leaves this
middleware with no ``Authorization`` header, so one a redirect carried to another host (or to
plain HTTP) is dropped. A URL asked again with credentials that still gets ``401`` is a failure
(``http-401``), not a loop.

Why by hand: Scrapy's ``HttpAuthMiddleware`` sends one Basic pair to one domain ahead of any
challenge and has no Digest; the Digest answer itself is the standard library's
(:class:`urllib.request.AbstractDigestAuthHandler`), fed a :class:`urllib.request.Request` made for
it.

Stats: ``tarantula/auth/challenged`` (401 answers that brought credentials),
``tarantula/auth/refused`` (a 401 to the credentials).
"""

from __future__ import annotations

import base64
import logging
import urllib.request
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from tarantula import meta
from tarantula.context import context_of
from tarantula.core.credentials import read_netrc
from tarantula.core.scope import origin

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

Origin = tuple[str, str, int]


class _Digest(urllib.request.AbstractDigestAuthHandler):
    """The standard library's Digest answer for one origin's realm (its nonce count kept)."""

    def __init__(self, root: str, user: str, password: str, challenge: dict[str, str]) -> None:
        manager = urllib.request.HTTPPasswordMgrWithDefaultRealm()
        manager.add_password(None, root, user, password)  # for any realm of the origin ``root``
        super().__init__(manager)
        self.challenge = challenge

    def answer(self, method: str, url: str) -> str | None:
        request = urllib.request.Request(url, method=method)
        value = self.get_authorization(request, self.challenge)
        return None if value is None else f"Digest {value}"


class AuthMiddleware:
    """See the module's docstring."""

    def __init__(self, crawler: Crawler) -> None:
        config = context_of(crawler).config
        if config.netrc is None:
            raise NotConfigured
        self.crawler = crawler
        self.netrc = read_netrc(config.netrc)
        self.https_only = {origin(seed).host for seed in config.starting_points
                           if seed.startswith("https:")}  # fmt: skip
        # An origin that asked: the folders it asked for, each with its answer.
        self.answers: dict[Origin, dict[str, str | _Digest]] = {}
        self.retried: set[str] = set()  # URLs asked again with credentials

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AuthMiddleware:
        return cls(crawler)

    def _origin(self, url: str) -> Origin:
        found = origin(url)
        return url.partition(":")[0].lower(), found.host.lower(), found.port

    def _credentials(self, where: Origin) -> tuple[str, str] | None:
        scheme, host, _ = where
        if scheme != "https" and host in self.https_only:
            return None
        found = self.netrc.authenticators(host)
        if found is None:
            return None
        login, _, password = found
        return login, password or ""

    def _answer(self, url: str) -> str | _Digest | None:
        """The answer for ``url``: its origin's for the deepest folder it is in, if any."""
        folders = self.answers.get(self._origin(url))
        if not folders:
            return None
        path = origin(url).path
        deepest = max(
            (folder for folder in folders if path.startswith(folder)), key=len, default=None
        )
        return None if deepest is None else folders[deepest]

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        answer = self._answer(request.url)
        if answer is None:
            request.headers.pop(b"Authorization", None)
        elif isinstance(answer, str):
            request.headers[b"Authorization"] = answer
        elif (value := answer.answer(request.method, request.url)) is not None:
            request.headers[b"Authorization"] = value

    def process_response(self, request: Request, response: Response,
                         spider: Spider | None = None) -> Request | Response:  # fmt: skip
        if response.status != 401:
            return response
        where = self._origin(request.url)
        credentials = self._credentials(where)
        challenge = (response.headers.get(b"WWW-Authenticate") or b"").decode("latin-1")
        if credentials is None or not challenge:
            return response
        url = request.meta.get(meta.URL, request.url)
        stats = self.crawler.stats
        if url in self.retried:
            if stats is not None:
                stats.inc_value("tarantula/auth/refused")
            logger.warning("The credentials for %s were refused: %s", where[1], request.url)
            return response
        scheme, _, rest = challenge.partition(" ")
        user, password = credentials
        answer: str | _Digest
        if scheme.lower() == "basic":
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            answer = f"Basic {token}"
        elif scheme.lower() == "digest":
            fields = urllib.request.parse_keqv_list(urllib.request.parse_http_list(rest))
            scheme_and_host = request.url.split("/", 3)[:3]
            answer = _Digest("/".join(scheme_and_host) + "/", user, password, fields)
        else:
            return response
        folder = origin(request.url).path.rpartition("/")[0] + "/"
        self.answers.setdefault(where, {})[folder] = answer
        self.retried.add(url)
        if stats is not None:
            stats.inc_value("tarantula/auth/challenged")
        logger.info("%s asks for %s credentials: %s asked again with them", where[1],
                    scheme, request.url)  # fmt: skip
        return request.replace(dont_filter=True)
