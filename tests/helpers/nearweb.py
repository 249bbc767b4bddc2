"""A generated web of near-duplicates (SPEC 6): distinct pages of one site template and known
variants of them, served by a :class:`~tarantula.demo.server.SiteServer` on host ``near.test``.

The distinct pages: ``ARTICLES`` articles (their own text a few hundred words, drawn from a
vocabulary of made-up words), ``TAGS`` tag pages whose own text is short (60 words beside a template
of about 100: the template outweighs them, the hard case for precision), ``LIST_PAGES`` pages of a
list, a news page and the first day of a calendar. Every page carries the template: a navigation
bar of 30 links, a header and a footer.

The variants, each linked from the page it is a variant of, so that a breadth-first crawl stores
the original first:

- ``session-query``: ``/article/N?sid=...``, its form carrying the session id;
- ``session-path``: ``/s/<sid>/article/N``;
- ``tracking``: ``/article/N?utm_source=...&utm_medium=...``;
- ``view``: ``/article/N?view=compact`` (another style, the same text);
- ``print``: ``/article/N/print`` (a "printed from" line for the "print" link), the one page
  that links to ``/notes/N`` (distinct pages: a crawl that leaves the variants out still follows
  their links);
- ``clock``: ``/news/1?t=K``, the time of the request in its text (a clock of the server's own
  that moves 7 s from one request to the next);
- ``pagination``: ``/list?page=P`` past the last page, which repeats the last page's items (up
  to ``LIST_REPEATS`` pages past it; with ``endless`` for ever);
- ``calendar``: ``/calendar/2026/12/D/``, a day without events, linking to the next day (up to
  ``CALENDAR_DAYS``; with ``endless`` for ever).

:func:`serve_near_web` adds the routes; :func:`variants` and :func:`distinct` list the URLs a test
expects marked and not marked.
"""

from __future__ import annotations

import random
from urllib.parse import parse_qs, urlsplit

from tarantula.demo.server import HTML, RequestRecord, Resource, SiteServer

HOST = "near.test"
ARTICLES = 24
TAGS = 12
LIST_PAGES = 4
LIST_REPEATS = 4  # pages past the last one, each repeating it
CLOCK_VARIANTS = 4
CALENDAR_DAYS = 12

_RNG = random.Random(40)
_SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ra", "to", "vi", "pe", "do", "ge", "zu", "fa", "hi"]
VOCABULARY = sorted({"".join(_RNG.choices(_SYLLABLES, k=_RNG.randint(2, 4))) for _ in range(3000)})


def words(seed: str, count: int) -> str:
    """``count`` words of made-up text, the same for the same ``seed``."""
    rng = random.Random(seed)
    text = rng.choices(VOCABULARY, k=count)
    return " ".join(" ".join(text[i : i + 12]).capitalize() + "." for i in range(0, count, 12))


_NAV = "".join(
    f'<li><a href="/{"tag" if i < TAGS else "article"}/{i % TAGS + 1 if i < TAGS else i - TAGS + 1}">'
    f"{words(f'nav{i}', 1).rstrip('.')}</a></li>"
    for i in range(30)
)
_FOOTER = words("footer", 36)


def _page(title: str, body: str, session: str = "") -> Resource:
    """A page of the site's template; with ``session``, its form carries the session id."""
    form = f'<form action="/search"><input type="hidden" name="sid" value="{session}"></form>'
    html = (
        f"<!DOCTYPE html><html><head><title>{title}</title>"
        '<style>body { font-family: serif }</style><script>var site = "near";</script></head>'
        f"<body><header><h1>Near site</h1><p>{words('header', 10)}</p></header>"
        f"<nav><ul>{_NAV}</ul></nav>{form if session else ''}<main><h2>{title}</h2>{body}</main>"
        f"<footer><p>{_FOOTER}</p></footer></body></html>"
    )
    return Resource(html.encode(), headers={"Content-Type": HTML})


def _article(number: int, session: str = "", extra: str = "", style: str = "") -> Resource:
    paragraphs = "".join(f"<p{style}>{words(f'article{number}-{p}', 90)}</p>" for p in range(10))
    return _page(f"Article {number}", extra + paragraphs + _variant_links(number), session)


def _variant_links(number: int) -> str:
    return (
        f'<p><a href="/article/{number}?sid=s{number}x">session</a> '
        f'<a href="/s/s{number}y/article/{number}">session path</a> '
        f'<a href="/article/{number}?utm_source=mail&amp;utm_medium=link">tracked</a> '
        f'<a href="/article/{number}?view=compact">compact</a> '
        f'<a href="/article/{number}/print">print</a></p>'
    )


def _list_page(page: int, endless: bool = False) -> Resource:
    shown = min(page, LIST_PAGES)
    items = "".join(f"<li><p>{words(f'item{shown}-{i}', 150)}</p></li>" for i in range(5))
    more = (
        f'<p><a href="/list?page={page + 1}">next page</a></p>'
        if endless or page < LIST_PAGES + LIST_REPEATS
        else ""
    )
    return _page(f"List page {page}", f"<ol>{items}</ol>{more}")


_CALENDAR_TEXT = words("calendar", 900)


def _calendar_day(day: int, endless: bool) -> Resource:
    following = day + 1
    link = (
        f'<p><a href="/calendar/2026/12/{following}/">next day</a></p>'
        if endless or following <= CALENDAR_DAYS
        else ""
    )
    return _page(
        f"Events of {day} December 2026", f"<p>No events.</p><p>{_CALENDAR_TEXT}</p>{link}"
    )


def serve_near_web(server: SiteServer, *, endless: bool = False) -> str:
    """Add the near web's routes to ``server``; returns its home page URL."""

    def answer(request: RequestRecord) -> Resource:
        parts = urlsplit(request.target)
        path, query = parts.path, parse_qs(parts.query)
        segments = [s for s in path.split("/") if s]
        if path == "/":
            articles = "".join(
                f'<li><a href="/article/{n}">article {n}</a></li>' for n in range(1, ARTICLES + 1)
            )
            tags = "".join(f'<li><a href="/tag/{n}">tag {n}</a></li>' for n in range(1, TAGS + 1))
            other = '<li><a href="/list?page=1">list</a></li><li><a href="/news/1">news</a></li>'
            other += '<li><a href="/calendar/2026/12/1/">calendar</a></li>'
            return _page("Home", f"<ul>{articles}{tags}{other}</ul>")
        if segments[:1] == ["s"] and len(segments) == 4 and segments[2] == "article":
            return _article(int(segments[3]), segments[1])
        if segments[:1] == ["article"] and len(segments) >= 2 and segments[1].isdigit():
            number = int(segments[1])
            if len(segments) == 3 and segments[2] == "print":
                notes = f'<p>Printed from {HOST}. <a href="/notes/{number}">notes</a></p>'
                return _article(number, extra=notes)
            if "sid" in query:
                return _article(number, query["sid"][0])
            if "utm_source" in query:
                return _article(number, style=' data-from="mail"')
            if query.get("view") == ["compact"]:
                return _article(number, style=' class="compact"')
            return _article(number)
        if segments[:1] == ["notes"]:
            number = int(segments[1])
            return _page(f"Notes {number}", f"<p>{words(f'notes{number}', 300)}</p>")
        if segments[:1] == ["tag"]:
            number = int(segments[1])
            return _page(f"Tag {number}", f"<p>{words(f'tag{number}', 60)}</p>")
        if path == "/list":
            return _list_page(int(query.get("page", ["1"])[0]), endless)
        if path == "/news/1":
            # The time of the request as the page shows it, from the server's own clock: here a
            # clock that moves 7 s between two requests of the page, so that a test's fingerprints
            # do not hang on when it runs.
            tick = int(query.get("t", ["0"])[0])
            clock = f"12:{tick * 7 // 60:02d}:{tick * 7 % 60:02d}"
            links = "".join(
                f'<a href="/news/1?t={k}">again {k}</a> ' for k in range(1, CLOCK_VARIANTS + 1)
            )
            # Every one shows the same links, as a news site's pages do: the pages differ by
            # their clock alone, and news/1, which links them, is always met first.
            body = f"<p>Page made at {clock}.</p><p>{words('news', 900)}</p><p>{links}</p>"
            return _page("News", body)
        if segments[:1] == ["calendar"] and len(segments) == 4:
            return _calendar_day(int(segments[3]), endless)
        return Resource(b"not here", 404, {"Content-Type": "text/plain"})

    server.add(HOST, "*", answer)
    return server.url(HOST, "/")


def variants(server: SiteServer, *, endless: bool = False) -> dict[str, str]:
    """The variant URLs (as the crawler normalizes them), each with its kind."""
    found = {}
    for n in range(1, ARTICLES + 1):
        found[server.url(HOST, f"/article/{n}?sid=s{n}x")] = "session-query"
        found[server.url(HOST, f"/s/s{n}y/article/{n}")] = "session-path"
        found[server.url(HOST, f"/article/{n}?utm_source=mail&utm_medium=link")] = "tracking"
        found[server.url(HOST, f"/article/{n}?view=compact")] = "view"
        found[server.url(HOST, f"/article/{n}/print")] = "print"
    for k in range(1, CLOCK_VARIANTS + 1):
        found[server.url(HOST, f"/news/1?t={k}")] = "clock"
    for page in range(LIST_PAGES + 1, LIST_PAGES + LIST_REPEATS + 1):
        found[server.url(HOST, f"/list?page={page}")] = "pagination"
    if not endless:
        for day in range(2, CALENDAR_DAYS + 1):
            found[server.url(HOST, f"/calendar/2026/12/{day}/")] = "calendar"
    return found


def distinct(server: SiteServer) -> list[str]:
    """The distinct pages: none of them may be marked a near-duplicate."""
    return [
        server.url(HOST, "/"),
        *(server.url(HOST, f"/article/{n}") for n in range(1, ARTICLES + 1)),
        *(server.url(HOST, f"/tag/{n}") for n in range(1, TAGS + 1)),
        *(server.url(HOST, f"/list?page={p}") for p in range(1, LIST_PAGES + 1)),
        server.url(HOST, "/news/1"),
        server.url(HOST, "/calendar/2026/12/1/"),
        *(server.url(HOST, f"/notes/{n}") for n in range(1, ARTICLES + 1)),
    ]
