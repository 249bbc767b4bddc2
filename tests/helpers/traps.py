"""The trap farm: hostile sites for end-to-end crawls, each added to a recording server.

Every builder adds one trap to a :class:`~tarantula.demo.server.SiteServer` (or to a
:class:`RawServer`, for faults that an HTTP server cannot commit: resets, silence, truncation) and
returns a :class:`Trap` that says where to start and what a correct crawl does there. Endless URL
spaces are built with callable routes that register the routes of the links they hand out, so the
space really never ends: only the crawler's guards can end the crawl.

Host names (all ``*.test``, mapped to 127.0.0.1 by the test configuration):

- ``calendar.test`` -- an endless calendar, ``/cal/2026/12`` links the previous and the next month;
- ``session.test`` -- every link carries a fresh ``;jsessionid=`` or ``?sid=``;
- ``deep.test`` -- ever deeper repeated paths, ``/a/b/`` links ``a/b/``;
- ``gen.test`` -- each page links two new random pages, forever;
- ``long.test`` -- each page links a URL twice as long;
- ``slow.test`` / ``fast.test`` -- a slow host next to a fast one;
- ``reset.test``, ``hang.test``, ``trunc.test``, ``mute.test`` -- raw hosts that reset or close
  connections, never finish an answer, truncate a body, or never answer for robots.txt;
- ``refused.test`` -- a port where nothing listens;
- ``error.test`` / ``broken.test`` -- 500 on pages / 500 everywhere, robots.txt included;
- ``ratelimit.test`` -- 429 or 503 with ``Retry-After``;
- ``loop.test`` -- redirect loops, endless chains, redirects off scope (``elsewhere.test``) and
  to other schemes (an ``ftp:`` one to ``sink.test``, a raw host that must see no connection);
- ``bomb.test`` -- a gzip bomb;
- ``dup.test`` -- one page under several URLs;
- ``evil.test`` / ``evil2.test`` -- path traversal, reserved names, over-long names (catch-all);
- ``inject.test`` -- titles, anchors and URLs that try to forge index lines;
- ``junk.test`` -- malformed HTML, lying charsets, binary bytes served as HTML;
- ``robots.test`` -- enormous or malformed robots.txt;
- ``fan.test`` -- a page with more links than ``max-outlinks``;
- ``scan.test`` -- a very long URL for the reject list to scan;
- ``start.test`` -- start pages that link a faulty host and a few good pages.
"""

from __future__ import annotations

import contextlib
import enum
import gzip
import hashlib
import html
import http
import random
import secrets
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tarantula.demo.server import HTML, RequestRecord, Resource, SiteServer

# -- what a test needs to know ---------------------------------------------------------------------


@dataclass
class Trap:
    """Where a crawl of the trap starts and what a correct crawl does there.

    ``fetched``: targets (path and query) on ``host`` that a correct crawl asks for (robots.txt
    aside), ``never``: targets it must never ask for, ``stored``: normalized URLs that end up in
    the index, ``dropped``: URLs that a rule drops, with the rule's name (for :func:`duplicates`:
    each duplicate URL with its original), ``server``: the raw server of a faulty host.
    """

    seed: str
    host: str
    fetched: list[str] = field(default_factory=list)
    never: list[str] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    server: RawServer | None = None


def html_page(title: str, body: str = "", links: list[tuple[str, str]] | None = None) -> bytes:
    anchors = "".join(f'<a href="{html.escape(h)}">{html.escape(t)}</a>\n' for h, t in links or [])
    return (
        f"<!DOCTYPE html>\n<html><head><title>{html.escape(title)}</title></head>\n"
        f"<body><h1>{html.escape(title)}</h1>\n{body}\n{anchors}</body></html>\n"
    ).encode()


def html_resource(
    title: str, links: list[tuple[str, str]] | None = None, delay: float = 0.0
) -> Resource:
    return Resource(html_page(title, links=links), headers={"Content-Type": HTML}, delay=delay)


def no_robots(web: SiteServer, host: str) -> None:
    """A robots.txt that allows everything (404), so a host's traps are reached at once."""
    web.add(host, "/robots.txt", Resource(b"no robots here\n", 404, {"Content-Type": "text/plain"}))


def start_page(web: SiteServer, links: list[str], host: str = "start.test") -> str:
    """A start page on ``host`` linking every URL of ``links``; returns its URL."""
    no_robots(web, host)
    web.add(host, "/", html_resource("Start", [(u, f"link {i}") for i, u in enumerate(links)]))
    return web.url(host, "/")


def ok_pages(web: SiteServer, host: str, count: int) -> list[str]:
    """``count`` plain pages on ``host``; returns their URLs."""
    urls = []
    for i in range(count):
        web.add(host, f"/ok{i}.html", html_resource(f"ok {i} on {host}"))
        urls.append(web.url(host, f"/ok{i}.html"))
    return urls


# -- endless URL spaces ------------------------------------------------------------------------------


def _shift(year: int, month: int, by: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + by
    return index // 12, index % 12 + 1


def calendar_target(year: int, month: int) -> str:
    return f"/cal/{year}/{month:02d}"


def calendar(
    web: SiteServer, depth: int, host: str = "calendar.test", start: tuple[int, int] = (2026, 12)
) -> Trap:
    """An endless calendar: each month links the previous and the next one, forever.

    Crawled with ``max-depth = depth`` from ``start`` it gives the ``2 * depth + 1`` months around
    it; the two months one hop further are dropped by ``max-depth``.
    """
    no_robots(web, host)

    def month(record: RequestRecord) -> Resource:
        _, _, year, mon = record.target.split("/")
        here = (int(year), int(mon))
        links = []
        for by, name in ((-1, "previous month"), (1, "next month")):
            target = calendar_target(*_shift(*here, by))
            web.add(host, target, month)
            links.append((target, name))
        return html_resource(f"Events of {here[0]}-{here[1]:02d}", links)

    web.add(host, calendar_target(*start), month)
    fetched = [calendar_target(*_shift(*start, by)) for by in range(-depth, depth + 1)]
    beyond = [calendar_target(*_shift(*start, by)) for by in (-depth - 1, depth + 1)]
    return Trap(
        seed=web.url(host, calendar_target(*start)),
        host=host,
        fetched=fetched,
        never=beyond,
        stored=[web.url(host, t) for t in fetched],
        dropped={web.url(host, t): "max-depth" for t in beyond},
    )


SESSION_PAGES = ("/a.html", "/b.html")


def session_ids(web: SiteServer, host: str = "session.test") -> Trap:
    """The same few pages under ever new session ids.

    ``/``, ``/a.html`` and ``/b.html`` each link ``/a.html`` and ``/b.html`` plainly and once more
    with a fresh id: ``/a.html;jsessionid=<random>`` and ``/b.html?sid=<random>``. Every id is new,
    so every such link is a URL never seen before. ``fetched`` lists the plain pages: what a crawl
    that rejects the ids fetches.
    """
    no_robots(web, host)

    def page(record: RequestRecord) -> Resource:
        fresh_a = f"/a.html;jsessionid={secrets.token_hex(8).upper()}"
        fresh_b = f"/b.html?sid={secrets.token_hex(8)}"
        for target in (fresh_a, fresh_b):
            web.add(host, target, page)
        links = [("/a.html", "A"), ("/b.html", "B"), (fresh_a, "A (session)"), (fresh_b, "B (s)")]
        return html_resource(f"Session page {record.target.split(';')[0].split('?')[0]}", links)

    for target in ("/", *SESSION_PAGES):
        web.add(host, target, page)
    fetched = ["/", *SESSION_PAGES]
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=fetched,
        stored=[web.url(host, t) for t in fetched],
    )


def session_page_count(depth: int) -> int:
    """Pages a crawl of :func:`session_ids` fetches with ``max-depth = depth`` (no id rejected):
    one seed, four new URLs at depth 1, then two new ones per page of the previous depth."""
    return 1 + 4 * (2**depth - 1)


REPEATED_GROUPS = ("a/b/", "x/", "c/d/e/")


def repeated_paths(web: SiteServer, allowed: int = 2, host: str = "deep.test") -> Trap:
    """Ever deeper repeated paths: ``/a/b/`` links ``a/b/`` (``/a/b/a/b/``), and so on forever;
    likewise ``/x/`` and ``/c/d/e/``. A path repeating a segment group more than ``allowed`` times
    (``max-path-repetitions``) in a row is dropped by ``pathological-path``;
    ``/docs/v1/docs/v2/docs/v3/page.html`` (repeated, but never in a row) is a legitimate page that
    must be fetched."""
    no_robots(web, host)

    def deeper(group: str) -> Callable[[RequestRecord], Resource]:
        def page(record: RequestRecord) -> Resource:
            web.add(host, record.target + group, page)
            return html_resource(f"Level {record.target}", [(group, "deeper")])

        return page

    fine = "/docs/v1/docs/v2/docs/v3/page.html"
    web.add(host, fine, html_resource("Versioned docs"))
    links = [(group, f"start {group}") for group in REPEATED_GROUPS] + [(fine, "docs")]
    web.add(host, "/", html_resource("Deep", links))
    for group in REPEATED_GROUPS:
        web.add(host, "/" + group, deeper(group))
    fetched = ["/", fine]
    fetched += ["/" + group * n for group in REPEATED_GROUPS for n in range(1, allowed + 1)]
    never = ["/" + group * n for group in REPEATED_GROUPS for n in (allowed + 1, allowed + 2)]
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=fetched,
        never=never,
        stored=[web.url(host, t) for t in fetched],
        dropped={
            web.url(host, "/" + group * (allowed + 1)): "pathological-path"
            for group in REPEATED_GROUPS
        },
    )


def link_generator(web: SiteServer, host: str = "gen.test") -> Trap:
    """A link generator that never ends: every page links two new random pages.

    With ``max-depth = d`` a crawl fetches ``2 ** (d + 1) - 1`` pages (see
    :func:`generated_page_count`) and drops the ``2 ** (d + 1)`` links one hop further.
    """
    no_robots(web, host)

    def page(record: RequestRecord) -> Resource:
        links = []
        for side in ("left", "right"):
            target = f"/g/{secrets.token_hex(6)}.html"
            web.add(host, target, page)
            links.append((target, side))
        return html_resource(f"Generated {record.target}", links)

    web.add(host, "/", page)
    return Trap(seed=web.url(host, "/"), host=host, fetched=["/"])


def generated_page_count(depth: int) -> int:
    return 2 ** (depth + 1) - 1


def ever_longer(web: SiteServer, max_url_length: int, host: str = "long.test") -> Trap:
    """Each page links a URL whose query is twice as long: ``/grow?q=a`` links ``/grow?q=aa``...

    ``fetched`` lists the targets whose URL fits in ``max_url_length``; the next one is dropped by
    ``url-length``.
    """
    no_robots(web, host)

    def page(record: RequestRecord) -> Resource:
        query = record.target.partition("=")[2]
        target = f"/grow?q={query * 2}"
        web.add(host, target, page)
        return html_resource(f"Length {len(query)}", [(target, "longer")])

    web.add(host, "/grow?q=a", page)
    fetched, size = [], 1
    while len(web.url(host, f"/grow?q={'a' * size}")) <= max_url_length:
        fetched.append(f"/grow?q={'a' * size}")
        size *= 2
    too_long = f"/grow?q={'a' * size}"
    return Trap(
        seed=web.url(host, "/grow?q=a"),
        host=host,
        fetched=fetched,
        never=[too_long],
        stored=[web.url(host, t) for t in fetched],
        dropped={web.url(host, too_long): "url-length"},
    )


def fan_out(web: SiteServer, links: int, host: str = "fan.test") -> Trap:
    """A page with ``links`` distinct links ``/f0.html`` ... (each page exists)."""
    no_robots(web, host)
    targets = [f"/f{i}.html" for i in range(links)]
    web.add(host, "/", html_resource("Fan", [(t, f"page {i}") for i, t in enumerate(targets)]))
    for i, target in enumerate(targets):
        web.add(host, target, html_resource(f"Fanned page {i}"))
    return Trap(seed=web.url(host, "/"), host=host, fetched=["/", *targets])


# -- slow and broken hosts -----------------------------------------------------------------------------


def slow_and_fast(
    web: SiteServer, slow_pages: int = 5, fast_pages: int = 12, delay: float = 1.0
) -> Trap:
    """A start page linking ``slow_pages`` pages of ``slow.test`` (each answered after ``delay``
    seconds) before ``fast_pages`` pages of ``fast.test`` (answered at once)."""
    no_robots(web, "slow.test")
    no_robots(web, "fast.test")
    slow = []
    for i in range(slow_pages):
        web.add("slow.test", f"/s{i}.html", html_resource(f"slow {i}", delay=delay))
        slow.append(web.url("slow.test", f"/s{i}.html"))
    fast = ok_pages(web, "fast.test", fast_pages)
    seed = start_page(web, slow + fast)
    return Trap(seed=seed, host="slow.test", stored=[seed, *slow, *fast])


def server_errors(web: SiteServer, pages: int = 4, host: str = "error.test") -> Trap:
    """Every page of ``host`` answers 500 (robots.txt is a plain 404); a start page links them
    and two good pages of ``start.test``."""
    no_robots(web, host)
    targets = [f"/p{i}.html" for i in range(pages)]
    for target in targets:
        web.add(host, target, Resource(b"<h1>Internal error</h1>", 500, {"Content-Type": HTML}))
    good = ok_pages(web, "start.test", 2)
    seed = start_page(web, [web.url(host, t) for t in targets] + good)
    return Trap(seed=seed, host=host, fetched=targets, stored=[seed, *good])


def everything_500(web: SiteServer, pages: int = 4, host: str = "broken.test") -> Trap:
    """500 everywhere, robots.txt included: the host is disallowed, its pages never asked for."""
    failing = Resource(b"<h1>Internal error</h1>", 500, {"Content-Type": HTML})
    web.add(host, "/robots.txt", failing)
    targets = [f"/p{i}.html" for i in range(pages)]
    for target in targets:
        web.add(host, target, failing)
    good = ok_pages(web, "start.test", 2)
    seed = start_page(web, [web.url(host, t) for t in targets] + good)
    return Trap(seed=seed, host=host, never=targets, stored=[seed, *good])


def rate_limited(
    web: SiteServer, status: int, retry_after: int, pages: int = 3, host: str = "ratelimit.test"
) -> Trap:
    """``/p0.html`` answers ``status`` with ``Retry-After: retry_after`` the first time, then 200;
    ``/`` links ``/p0.html`` ... ``/p{pages-1}.html``."""
    no_robots(web, host)
    targets = [f"/p{i}.html" for i in range(pages)]
    calls = {"count": 0}
    good = html_resource("Patience rewarded")
    refusal = Resource(
        b"Too many requests, come back later\n",
        status,
        {"Retry-After": str(retry_after), "Content-Type": "text/plain"},
    )

    def limited(record: RequestRecord) -> Resource:
        calls["count"] += 1
        return refusal if calls["count"] == 1 else good

    web.add(host, "/", html_resource("Rate limited", [(t, t) for t in targets]))
    web.add(host, targets[0], limited)
    for target in targets[1:]:
        web.add(host, target, html_resource(f"Page {target}"))
    fetched = ["/", *targets]
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=fetched,
        stored=[web.url(host, t) for t in fetched],
    )


# -- redirects -----------------------------------------------------------------------------------------


def _redirect(location: str, status: int = 302) -> Resource:
    return Resource(b"", status, {"Location": location, "Content-Type": HTML})


def redirect_loops(web: SiteServer, host: str = "loop.test") -> Trap:
    """``/loop1`` -> ``/loop2`` -> ``/loop1``; ``/self`` -> ``/self``; and a plain redirect
    ``/ok`` -> ``/ok.html`` as a control (followed and stored under ``/ok.html``)."""
    no_robots(web, host)
    web.add(host, "/loop1", _redirect("/loop2"))
    web.add(host, "/loop2", _redirect(web.url(host, "/loop1")))
    web.add(host, "/self", _redirect("/self", 301))
    web.add(host, "/ok", _redirect("/ok.html"))
    web.add(host, "/ok.html", html_resource("Arrived"))
    links = [("/loop1", "loop"), ("/self", "self"), ("/ok", "ok")]
    web.add(host, "/", html_resource("Loops", links))
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=["/", "/loop1", "/loop2", "/self", "/ok", "/ok.html"],
        stored=[web.url(host, "/"), web.url(host, "/ok.html")],
    )


def redirect_chain(web: SiteServer, host: str = "loop.test") -> Trap:
    """``/spin/0`` -> ``/spin/1`` -> ... forever, each target new."""
    no_robots(web, host)

    def spin(record: RequestRecord) -> Resource:
        step = int(record.target.rsplit("/", 1)[1])
        web.add(host, f"/spin/{step + 1}", spin)
        return _redirect(f"/spin/{step + 1}")

    web.add(host, "/spin/0", spin)
    web.add(host, "/", html_resource("Chain", [("/spin/0", "spin")]))
    return Trap(seed=web.url(host, "/"), host=host, stored=[web.url(host, "/")])


def hostile_redirects(
    web: SiteServer, sink: RawServer, secret: Path, host: str = "loop.test"
) -> Trap:
    """Redirects that must never be followed: off scope (``elsewhere.test``), to ``ftp:`` (at the
    ``sink`` server, which must see no connection), ``javascript:``, ``data:`` (whose HTML links a
    page), ``file:`` (the local file ``secret``), ``mailto:`` and a malformed ``http://[bad/``.

    ``dropped`` maps each redirect target to the rule expected to refuse it.
    """
    no_robots(web, host)
    no_robots(web, "elsewhere.test")
    web.add("elsewhere.test", "/", html_resource("Elsewhere"))
    leak = web.url(host, "/leaked-from-data.html")
    web.add(host, "/leaked-from-data.html", html_resource("Leaked"))
    targets = {
        "/away": (web.url("elsewhere.test", "/"), "scope"),
        "/ftp": (sink.url("sink.test", "/pub/file.html").replace("http:", "ftp:"), "scheme"),
        "/js": ("javascript:alert(document.cookie)", "scheme"),
        "/data": (f'data:text/html,<a href="{leak}">leak</a>', "scheme"),
        "/file": (secret.as_uri(), "scheme"),
        "/mailto": ("mailto:webmaster@loop.test", "scheme"),
    }
    for target, (location, _) in targets.items():
        web.add(host, target, _redirect(location))
    web.add(host, "/badloc", _redirect("http://[bad/"))
    links = [(t, t) for t in [*targets, "/badloc"]]
    web.add(host, "/", html_resource("Hostile redirects", links))
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=["/", *targets, "/badloc"],
        never=["/leaked-from-data.html"],
        stored=[web.url(host, "/")],
        dropped={location: rule for location, rule in targets.values()}
        | {"http://[bad/": "invalid"},
    )


# -- bodies: bombs, duplicates, junk -----------------------------------------------------------------


def gzip_bomb_body(inflated: int) -> bytes:
    """A gzip member that inflates to ``inflated`` bytes (an HTML start, then zeros)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip wrapper
    parts = [compressor.compress(b"<html><head><title>Bomb</title></head><body>")]
    chunk = b"\0" * (1 << 20)
    for _ in range(inflated >> 20):
        parts.append(compressor.compress(chunk))
    parts.append(compressor.flush())
    return b"".join(parts)


def gzip_bomb(web: SiteServer, inflated: int = 64 << 20, host: str = "bomb.test") -> Trap:
    """``/bomb.html``: a small gzip body (``Content-Encoding: gzip``) that inflates to ``inflated``
    bytes; ``/ok.html``: a small gzip page linking ``/after.html`` (a control: stored decompressed)."""
    no_robots(web, host)
    gz = {"Content-Type": HTML, "Content-Encoding": "gzip"}
    web.add(host, "/bomb.html", Resource(gzip_bomb_body(inflated), headers=gz))
    web.add(host, "/ok.html", Resource(gzip.compress(OK_GZIP_PAGE), headers=gz))
    web.add(host, "/after.html", html_resource("After the bomb"))
    links = [("/bomb.html", "bomb"), ("/ok.html", "ok")]
    web.add(host, "/", html_resource("Bombs", links))
    fetched = ["/", "/bomb.html", "/ok.html", "/after.html"]
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=fetched,
        stored=[web.url(host, t) for t in ("/", "/ok.html", "/after.html")],
    )


OK_GZIP_PAGE = b'<html><title>Compressed</title><a href="/after.html">after</a></html>'


def oversized_host(
    web: SiteServer, serve: Callable[[Responder], RawServer], size: int, host: str = "big.test"
) -> Trap:
    """A raw host with four documents of ``size`` bytes, two announcing it (Content-Length) and two
    streamed with no length (the body ends when the connection closes), then a small page; a start
    page links them in that order."""
    body = html_page("Big", links=[]) + b"x" * size
    streamed = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n" + body
    answers = {
        "/robots.txt": NOT_FOUND,
        "/declared-1.html": http_response(200, body),
        "/declared-2.html": http_response(200, body),
        "/streamed-1.html": streamed,
        "/streamed-2.html": streamed,
        "/small.html": http_response(200, html_page("Small")),
    }
    raw = serve(lambda h, t: answers.get(t, NOT_FOUND))
    targets = [t for t in answers if t != "/robots.txt"]
    seed = start_page(web, [raw.url(host, t) for t in targets])
    return Trap(
        seed=seed,
        host=host,
        fetched=targets,
        stored=[seed, raw.url(host, "/small.html")],
        server=raw,
    )


DUPLICATE_BODY = (
    b"<!DOCTYPE html><html><head><title>The same page</title></head>"
    b'<body><p>Same bytes, several URLs.</p><a href="child.html">child</a></body></html>\n'
)


def duplicates(web: SiteServer, host: str = "dup.test") -> Trap:
    """One body under three URLs: ``/one/page.html`` (first in bfs order), ``/two/page.html`` and
    ``/one/page.html?utm=1``. Its relative link ``child.html`` gives ``/one/child.html`` (fetched
    from the original) and ``/two/child.html`` (only the duplicate has it: never fetched).

    ``dropped`` maps each duplicate URL to its original.
    """
    no_robots(web, host)
    for target in ("/one/page.html", "/two/page.html", "/one/page.html?utm=1"):
        web.add(host, target, Resource(DUPLICATE_BODY, headers={"Content-Type": HTML}))
    for target in ("/one/child.html", "/two/child.html"):
        web.add(host, target, html_resource(f"Child {target}"))
    links = [(t, t) for t in ("/one/page.html", "/two/page.html", "/one/page.html?utm=1")]
    web.add(host, "/", html_resource("Duplicates", links))
    u = lambda t: web.url(host, t)  # noqa: E731
    return Trap(
        seed=u("/"),
        host=host,
        fetched=[
            "/",
            "/one/page.html",
            "/two/page.html",
            "/one/page.html?utm=1",
            "/one/child.html",
        ],
        never=["/two/child.html"],
        stored=[u("/"), u("/one/page.html"), u("/one/child.html")],
        dropped={
            u("/two/page.html"): u("/one/page.html"),
            u("/one/page.html?utm=1"): u("/one/page.html"),
        },
    )


def junk_pages(web: SiteServer, host: str = "junk.test") -> Trap:
    """Pages a parser can choke on, each linking a plain page ``/after-<name>.html``:

    - ``/binary.html``: 30 kB of random bytes served as ``text/html``;
    - ``/malformed.html`` (title ``Broken markup``): misnested and unclosed tags, an unquoted
      ``href``, 3000 nested ``<div>``, then an unclosed quote and an unclosed comment that hide a
      link to ``/hidden.html``;
    - ``/wrong-charset.html``: windows-1252 bytes (``Café crème``) under ``charset=utf-8``;
    - ``/bogus-charset.html``: ``charset=x-no-such-charset``, title ``Bogus``;
    - ``/untyped.html``: no Content-Type at all, title ``Untyped``;
    - ``/meta-liar.html``: ``<meta charset="utf-16">`` over ASCII bytes, title ``Liar``;
    - ``/corrupt-gzip.html``: ``Content-Encoding: gzip`` over bytes that are not gzip.
    """
    no_robots(web, host)
    after = lambda name: f'<a href="/after-{name}.html">after</a>'  # noqa: E731
    noise = random.Random(7).randbytes(30_000)
    pages: dict[str, tuple[bytes, dict[str, str]]] = {
        "binary": (
            noise[:15_000] + after("binary").encode() + noise[15_000:],
            {"Content-Type": HTML},
        ),
        "malformed": (
            (
                "<html><head><title>Broken markup</title><body><p><b><i>never closed"
                + after("malformed")
                + "</b></p></i><table><tr><td>cell<a href=/after-unquoted.html>x"
                + "<div>" * 3000
                + '<p>deep</p><p class="unclosed><!-- never closed <a href=/hidden.html>'
            ).encode(),
            {"Content-Type": HTML},
        ),
        "wrong-charset": (
            ("<title>Café crème</title>" + after("wrong-charset")).encode("cp1252"),
            {"Content-Type": "text/html; charset=utf-8"},
        ),
        "bogus-charset": (
            ("<title>Bogus</title>" + after("bogus-charset")).encode(),
            {"Content-Type": "text/html; charset=x-no-such-charset"},
        ),
        "untyped": (("<title>Untyped</title>" + after("untyped")).encode(), {}),
        "meta-liar": (
            ('<meta charset="utf-16"><title>Liar</title>' + after("meta-liar")).encode(),
            {"Content-Type": "text/html"},
        ),
    }
    for name, (body, headers) in pages.items():
        web.add(host, f"/{name}.html", Resource(body, headers=headers))
        web.add(host, f"/after-{name}.html", html_resource(f"After {name}"))
    web.add(host, "/after-unquoted.html", html_resource("After unquoted"))
    web.add(host, "/hidden.html", html_resource("Hidden in a comment"))
    corrupt = {"Content-Type": HTML, "Content-Encoding": "gzip"}
    web.add(host, "/corrupt-gzip.html", Resource(b"\x1f\x8b\x08\x00garbage" * 50, headers=corrupt))
    links = [(f"/{n}.html", n) for n in pages] + [("/corrupt-gzip.html", "corrupt")]
    web.add(host, "/", html_resource("Junk", links))
    stored = ["/", *(f"/{n}.html" for n in pages), "/after-unquoted.html"]
    stored += [f"/after-{n}.html" for n in pages if n != "binary"]
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=[*stored, "/corrupt-gzip.html"],
        never=["/hidden.html"],
        stored=[web.url(host, t) for t in stored],
    )


# -- robots.txt ----------------------------------------------------------------------------------------


def huge_robots(web: SiteServer, size: int = 2 << 20, host: str = "robots.test") -> Trap:
    """A robots.txt of ``size`` bytes: a group for every agent that disallows ``/private/``,
    then a group for another robot with tens of thousands of rules."""
    head = b"User-agent: *\nDisallow: /private/\n\nUser-agent: otherbot\n"
    lines, total, i = [head], len(head), 0
    while total < size:
        line = b"Disallow: /junk/%d/some/long/path/segment/to/make/it/big/\n" % i
        lines.append(line)
        total += len(line)
        i += 1
    web.add(host, "/robots.txt", Resource(b"".join(lines), headers={"Content-Type": "text/plain"}))
    return _robots_site(web, host)


MALFORMED_ROBOTS = (
    b"\xef\xbb\xbf\xff\xfe\x00<html><body><h1>Welcome!</h1>Not a robots file</body></html>\n"
    b"Disallow /nocolon\nUser-agent tarantula\n:::\n\x00\x01\x02\n"
    + b"A" * 100_000
    + b"\nUser-agent: *\nAllow\nDisallow: \n\xc3\x28\xa0\xa1\n"
)


def malformed_robots(web: SiteServer, host: str = "robots.test") -> Trap:
    """A robots.txt of HTML, binary bytes, invalid UTF-8, lines without colons, a 100 kB line."""
    web.add(host, "/robots.txt", Resource(MALFORMED_ROBOTS, headers={"Content-Type": "text/plain"}))
    return _robots_site(web, host)


def _robots_site(web: SiteServer, host: str) -> Trap:
    web.add(host, "/", html_resource("Robots", [("/ok.html", "ok"), ("/private/x.html", "p")]))
    web.add(host, "/ok.html", html_resource("Allowed"))
    web.add(host, "/private/x.html", html_resource("Private"))
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=["/", "/ok.html"],
        stored=[web.url(host, "/"), web.url(host, "/ok.html")],
    )


# -- index forging, long URLs ------------------------------------------------------------------------

FAKE_MD5 = "0123456789abcdef0123456789abcdef"
FORGED_TITLE = (
    f"Home\tpage\r\n{FAKE_MD5}\thttp://forged.test/\thttp://forged.test/\tForged\tutf-8\thtml"
    "\t-\t-\x85\t@http://forged.test/ x\u2028\u2029\x0b\x0c\x1cend"
)
FORGED_TITLE_CLEAN = (
    f"Home page {FAKE_MD5} http://forged.test/ http://forged.test/ Forged utf-8 html - - "
    "@http://forged.test/ x end"
)
FORGED_ANCHOR = f"go&#9;on&#10;{FAKE_MD5}&#13;&#x2028;\t@http://forged.test/ y"
FORGED_ANCHOR_CLEAN = f"go on {FAKE_MD5} @http://forged.test/ y"


def forged_index(web: SiteServer, host: str = "inject.test") -> Trap:
    """Titles, anchors and URLs that try to write their own index lines.

    ``/`` has :data:`FORGED_TITLE` and links ``/b.html`` (anchor :data:`FORGED_ANCHOR`, with
    character references), ``/c.html?q=%0D%0A%09x`` (encoded breaks), ``/d.html`` written with a
    raw newline and tab inside ``href`` and ``/e.html`` with a raw U+2028 and NEL in its query.
    ``/b.html`` has a NUL and a tab in its title. ``stored`` lists the five normalized URLs.
    """
    no_robots(web, host)
    body = (
        f"<!DOCTYPE html><html><head><title>{FORGED_TITLE}</title></head><body>"
        f'<a href="/b.html">{FORGED_ANCHOR}</a>'
        '<a href="/c.html?q=%0D%0A%09x">encoded breaks</a>'
        '<a href="/d.\n\thtml">raw breaks in href</a>'
        '<a href="/e.html?q=a\u2028b\x85c">unicode breaks</a>'
        "</body></html>"
    )
    web.add(host, "/", Resource(body.encode(), headers={"Content-Type": HTML}))
    nul = f"<title>nul\x00\t@http://forged.test/ z\n{FAKE_MD5}\tx</title>"
    web.add(host, "/b.html", Resource(nul.encode(), headers={"Content-Type": HTML}))
    targets = ["/c.html?q=%0D%0A%09x", "/d.html", "/e.html?q=a%E2%80%A8b%C2%85c"]
    for target in targets:
        web.add(host, target, html_resource(f"Plain {target[:7]}"))
    stored = ["/", "/b.html", *targets]
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=stored,
        stored=[web.url(host, t) for t in stored],
    )


def long_url(web: SiteServer, length: int, host: str = "scan.test") -> Trap:
    """``/`` links one URL whose path is ``length`` characters (no pattern of a usual reject list
    matches it) and ``/ok.html``."""
    no_robots(web, host)
    long_target = "/" + "a" * length + ".html"
    web.add(host, "/", html_resource("Long", [(long_target, "long"), ("/ok.html", "ok")]))
    web.add(host, "/ok.html", html_resource("Fine"))
    return Trap(
        seed=web.url(host, "/"),
        host=host,
        fetched=["/", "/ok.html"],
        stored=[web.url(host, "/"), web.url(host, "/ok.html")],
    )


# -- a raw TCP server for faults HTTP servers do not commit -----------------------------------------


class Fault(enum.Enum):
    """What a :class:`RawServer` does instead of answering."""

    RESET = "reset"  # close at once with a TCP RST
    CLOSE = "close"  # close at once, not a byte sent
    SILENT = "silent"  # keep the connection open, never send anything
    DRIP = "drip"  # send headers promising 1 MB, then a byte every 0.2 s, never the end


Answer = bytes | Fault
Responder = Callable[[str, str], Answer]


@dataclass(frozen=True)
class RawRequest:
    time: float
    host: str
    target: str


def http_response(
    status: int = 200, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    """An HTTP/1.1 answer (``Connection: close``); ``headers`` may override Content-Length."""
    fields = {"Content-Type": HTML, "Content-Length": str(len(body)), "Connection": "close"}
    fields.update(headers or {})
    head = f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    return head.encode("latin-1") + body


NOT_FOUND = http_response(404, b"not here\n", {"Content-Type": "text/plain"})


class RawServer:
    """A TCP server on 127.0.0.1 that reads one request per connection and lets ``respond(host,
    target)`` decide: bytes to send before closing, or a :class:`Fault`. It records every request
    (``requests``) and counts every connection (``connections``), even one that sends nothing."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests: list[RawRequest] = []
        self.connections = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(
            target=self._accept, name=f"RawServer:{self.port}", daemon=True
        )

    def start(self) -> RawServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def __enter__(self) -> RawServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def url(self, host: str, target: str = "/") -> str:
        return f"http://{host}:{self.port}{target}"

    def targets(self, host: str | None = None) -> list[str]:
        with self._lock:
            return [r.target for r in self.requests if host is None or r.host == host]

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.2)
            data = b""
            deadline = time.monotonic() + 5
            while (
                b"\r\n\r\n" not in data and time.monotonic() < deadline and not self._stop.is_set()
            ):
                try:
                    chunk = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not chunk:
                    break
                data += chunk
            if b"\r\n\r\n" not in data:
                return
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            parts = head[0].split(" ")
            target = parts[1] if len(parts) > 1 else ""
            host = ""
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "host":
                    host = value.strip().lower().rsplit(":", 1)[0]
            with self._lock:
                self.requests.append(RawRequest(time.monotonic(), host, target))
            answer = self.respond(host, target)
            with contextlib.suppress(OSError):
                self._act(conn, answer)

    def _act(self, conn: socket.socket, answer: Answer) -> None:
        if isinstance(answer, bytes):
            conn.sendall(answer)
            conn.shutdown(socket.SHUT_WR)
        elif answer is Fault.RESET:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif answer is Fault.SILENT:
            while not self._stop.is_set():
                try:
                    if not conn.recv(65536):
                        return  # the client gave up
                except TimeoutError:
                    continue
        elif answer is Fault.DRIP:
            conn.sendall(
                http_response(200, b"<html><title>drip</title>", {"Content-Length": "1000000"})
            )
            while not self._stop.wait(0.2):
                conn.sendall(b".")
        # Fault.CLOSE: nothing to send; leaving the `with` closes the connection


def fault_host(
    web: SiteServer,
    serve: Callable[[Responder], RawServer],
    fault: Fault,
    pages: int = 8,
    host: str = "reset.test",
) -> Trap:
    """A raw host whose robots.txt is a plain 404 but whose ``pages`` pages all meet ``fault``; a
    start page links them and four good pages of ``start.test``."""
    raw = serve(lambda h, t: NOT_FOUND if t == "/robots.txt" else fault)
    targets = [f"/p{i}.html" for i in range(pages)]
    good = ok_pages(web, "start.test", 4)
    seed = start_page(web, [raw.url(host, t) for t in targets] + good)
    return Trap(seed=seed, host=host, fetched=targets, stored=[seed, *good], server=raw)


def refused_host(web: SiteServer, port: int, pages: int = 5, host: str = "refused.test") -> Trap:
    """``pages`` pages of ``host`` at ``port``, where nothing listens (every connection is
    refused, robots.txt included); a start page links them and two good pages of ``start.test``.
    """
    targets = [f"/p{i}.html" for i in range(pages)]
    good = ok_pages(web, "start.test", 2)
    seed = start_page(web, [f"http://{host}:{port}{t}" for t in targets] + good)
    return Trap(seed=seed, host=host, never=targets, stored=[seed, *good])


def truncating_host(
    web: SiteServer, serve: Callable[[Responder], RawServer], host: str = "trunc.test"
) -> Trap:
    """``/cut.html`` promises 5000 bytes (Content-Length), sends 100 and closes."""
    body = html_page("Cut short", links=[("/never-seen.html", "lost")])
    cut = http_response(200, body[:100], {"Content-Length": "5000"})

    def respond(h: str, target: str) -> Answer:
        if target == "/robots.txt":
            return NOT_FOUND
        return cut if target == "/cut.html" else http_response(200, html_page(f"page {target}"))

    raw = serve(respond)
    good = ok_pages(web, "start.test", 2)
    seed = start_page(web, [raw.url(host, "/cut.html"), *good])
    return Trap(seed=seed, host=host, fetched=["/cut.html"], stored=[seed, *good], server=raw)


def silent_robots(
    web: SiteServer, serve: Callable[[Responder], RawServer], host: str = "mute.test"
) -> Trap:
    """A host whose robots.txt never answers (its pages would answer at once)."""

    def respond(h: str, target: str) -> Answer:
        return Fault.SILENT if target == "/robots.txt" else http_response(200, html_page(target))

    raw = serve(respond)
    targets = ["/a.html", "/b.html"]
    good = ok_pages(web, "start.test", 2)
    seed = start_page(web, [raw.url(host, t) for t in targets] + good)
    return Trap(seed=seed, host=host, never=targets, stored=[seed, *good], server=raw)


# -- path traversal and other names a file system may not like ------------------------------------

TRAVERSAL_HREFS = (
    "/%2e%2e/%2e%2e/etc/passwd",
    "/%2E%2E/%2E%2E/%2E%2E/escaped-upper.html",
    "/.%2e/.%2e/.%2e/escaped-dotmix.html",
    "/..%2f..%2f..%2fescaped-slash.html",
    "/a/%2e%2e%2f%2e%2e%2f%2e%2e%2fescaped-mixed.html",
    "/%2e%2e%2f%2e%2e%2f",
    "/..%5c..%5c..%5cescaped-backslash.html",
    "/..\\..\\..\\escaped-rawbackslash.html",
    "/%c0%ae%c0%ae/%c0%ae%c0%ae/escaped-overlong.html",
    "../../../../escaped-raw.html",
    "/nul%00byte.html",
    "/nul%00/x.html",
    "/" + "L" * 300 + ".html",
    "/" + "é" * 150 + "/x.html",
    "/" + "%2e" * 120 + "/y.html",
    "/CON",
    "/nul.txt",
    "/aux",
    "/com1.html",
    "/LPT1/x.html",
    "/con.html?x=1",
    "/q.html?path=../../../escaped-query.html",
    "/q.html?x=%2F..%2F..%2Fescaped-query2.html",
    "/planted/page.html",
    "/victim.html",
)


def traversal_site(
    serve: Callable[[Responder], RawServer], host: str = "evil.test", other: str = "evil2.test"
) -> Trap:
    """A catch-all host: every target answers 200 with an HTML page naming it (so no two bodies are
    equal), ``/`` links :data:`TRAVERSAL_HREFS` and ``http://<other>:<port>/x.html``.

    A test plants, before the crawl, ``<repo>/<host>:<port>/planted`` and ``victim.html`` and the
    whole ``<repo>/<other>:<port>`` folder as symlinks pointing outside the repository.
    """

    def respond(h: str, target: str) -> Answer:
        if target == "/robots.txt":
            return NOT_FOUND
        if target == "/":
            links = [(href, f"hostile {i}") for i, href in enumerate(TRAVERSAL_HREFS)]
            links.append((f"http://{other}:{raw.port}/x.html", "other host"))
            return http_response(200, html_page("Traversal", links=links))
        digest = hashlib.md5(f"{h} {target}".encode()).hexdigest()
        return http_response(200, html_page(f"Page {digest}", f"<p>{html.escape(target)}</p>"))

    raw = serve(respond)
    return Trap(seed=raw.url(host, "/"), host=host, server=raw)
