"""Which of a page's links are listed in its index record and which are fetched (SPEC 5, 6, 7.2).

Two steps, both pure. :func:`resolve_links` resolves each ``href`` against the page's base and runs
it through the crawl's URL rules; robots.txt comes next, and needs the network, so its verdicts
are looked up by the caller for every site the candidates name (:func:`sites`) and passed in to
:func:`plan_links`, which decides the rest. ``scrapy explain`` runs the same two steps for the URLs
it is given.

>>> from pathlib import Path
>>> from tarantula.core.config import CrawlConfig
>>> from tarantula.core.rules import UrlRules
>>> rules = UrlRules(CrawlConfig(path=Path("c"), starting_points=("http://a.org/",)))
>>> found = resolve_links("http://a.org/x/", None, [("p.html", "P"), ("http://b.org/", "B"), ("mailto:m", "")], rules)
>>> [link.url for link in found.links], found.drops
(['http://a.org/x/p.html'], [('scope', 'http://b.org/'), ('scheme', 'mailto:m')])
>>> plan = plan_links(found.links, rules, robots=lambda url: True, seen=lambda url: False, depth=1)
>>> plan.listed, [link.url for link in plan.fetch]
([('http://a.org/x/p.html', 'P')], ['http://a.org/x/p.html'])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

from tarantula.core.reader import Resolved
from tarantula.core.rules import RULE_HELP, UrlRules, Verdict
from tarantula.core.scope import origin
from tarantula.core.urls import (
    LinkResolver,
    UrlRejected,
    file_name,
    page_base,
    query_in_encoding,
    without_fragment,
)

#: Log out, sign out, log off, end session: any case, any separator, not inside a longer word
#: (``/catalog/outdoor``, ``blog-offers`` are not).
_LOGOUT = re.compile(
    r"(?<![a-z])(?:(?:log|sign)[\s_.+-]*(?:out|off)|end[\s_.+-]*session)(?![a-z])", re.IGNORECASE
)


def logs_out(url: str, anchor: str = "") -> bool:
    """Whether following a link would log the crawl out (SPEC 13): its URL's path or query, or its
    anchor text, says so.

    >>> [logs_out(u) for u in ("http://a.org/logout", "http://a.org/x?action=Sign_Off",
    ...                        "http://a.org/end-session.php", "http://a.org/log%20out")]
    [True, True, True, True]
    >>> logs_out("http://a.org/bye.php", "Log Out"), logs_out("http://a.org/u", "Sign out now")
    (True, True)
    >>> [logs_out(u) for u in ("http://a.org/catalog/outdoor.html", "http://a.org/blog-offers",
    ...                        "http://logout.example/", "http://a.org/login")]
    [False, False, False, False]
    """
    target = unquote(url.partition("://")[2].partition("/")[2])  # the path and query: no host
    return bool(_LOGOUT.search(target) or (anchor and _LOGOUT.search(anchor)))


@dataclass(frozen=True, slots=True)
class Link:
    """A link that passed the URL rules."""

    position: int  # in the page's links (a step of the dfs path)
    url: str  # normalized
    absolute: str  # as resolved, before normalization: the index's originalurl
    anchor: str
    verdict: Verdict


@dataclass
class Found:
    links: list[Link] = field(default_factory=list)
    drops: list[tuple[str, str]] = field(default_factory=list)  # (rule, URL or href as written)


@dataclass
class LinkPlan:
    listed: list[tuple[str, str]] = field(default_factory=list)  # (link, anchor), for the index
    fetch: list[Link] = field(default_factory=list)  # new links worth a request
    drops: list[tuple[str, str]] = field(default_factory=list)  # (rule, URL)


def resolve_links(page_url: str, base_href: str | None, hrefs: Sequence[tuple[str, str]],
                  rules: UrlRules, max_outlinks: int = 0, encoding: str | None = None,
                  resolved: Resolved | None = None) -> Found:  # fmt: skip
    """Resolve ``hrefs`` (``(href, anchor)`` in document order) against the page's base (its
    ``<base href>``, else its URL) and keep those the URL rules let through; the rest are drops, a
    page's links past ``max_outlinks`` too. A query is written in the page's ``encoding``, as
    browsers send it (:func:`~tarantula.core.urls.query_in_encoding`).

    Pages repeat their navigation links, and a link's join and verdict depend only on the base's
    folder (the whole base for an empty link, one that starts with ``?`` or ``#``, or with
    white space, which the join strips): both are
    remembered in ``rules.links`` by (folder, link as written), so a link met again costs one
    lookup.

    ``resolved``, when given, is filled with the links the browse conversion would resolve the
    same way (:func:`tarantula.core.browse.link_absolute`), so that it need not: each ASCII href
    that does not start with white space or ``#`` and has a normalized URL, with its absolute URL
    (``joins``), and that URL without its fragment with its normalized URL (``keys``).
    """
    found = Found()
    base = page_base(page_url, base_href)  # a broken or non-http(s) <base href> is ignored
    resolver = LinkResolver(base)
    join = resolver.join
    if max_outlinks and len(hrefs) > max_outlinks:
        found.drops += [("too-many-outlinks", _joined(join, h)) for h, _ in hrefs[max_outlinks:]]
        hrefs = hrefs[:max_outlinks]
    memo = rules.links
    folder = resolver.folder if resolver.fast else base
    links, drops = found.links, found.drops
    for position, (href, anchor) in enumerate(hrefs):
        written = href
        if not href.isascii():
            href = query_in_encoding(href, encoding)
        first = href[:1]
        key = (base if not first or first in "?#" or first <= " " else folder, href)
        judged = memo.get(key)
        if judged is None:
            judged = memo[key] = _judge(join, rules, href)
            if len(memo) > LINKS_KEPT:
                memo.clear()
        absolute, verdict = judged
        # An ASCII href (``href is written``) is joined as the conversion joins it.
        if resolved is not None and first > "#" and href is written and verdict and verdict.url:
            resolved.joins[href] = absolute
            resolved.keys[without_fragment(absolute)] = verdict.url
        if verdict is None:
            drops.append(("invalid", href))
        elif verdict.url is None or not verdict.listed:
            drops.append((verdict.rule or "invalid", absolute))
        else:
            links.append(Link(position, verdict.url, absolute, anchor, verdict))
    return found


#: Links remembered by :func:`resolve_links` before the memory is cleared: with its strings an entry
#: holds about 800 bytes, and 65,536 of them added 56 MB to the peak RSS of the benchmark's crawl.
LINKS_KEPT = 16384


def _judge(join: Callable[[str], str], rules: UrlRules, href: str) -> tuple[str, Verdict | None]:
    """A link as resolved, and its verdict (None: it does not resolve)."""
    try:
        absolute = join(href)
    except UrlRejected:
        return href, None
    return absolute, rules.check(absolute, href)


def _joined(join: Callable[[str], str], href: str) -> str:
    try:
        return join(href)
    except UrlRejected:
        return href


def plan_links(links: Sequence[Link], rules: UrlRules, *, robots: Callable[[str], bool],
               seen: Callable[[str], bool], depth: int, max_depth: int = 0) -> LinkPlan:  # fmt: skip
    """Split the links that passed the URL rules into the listed ones and those to fetch.

    ``robots`` says whether robots.txt allows a normalized URL (its site's rules are known by
    now); ``seen`` whether the frontier knows it already; ``depth`` is the links' distance from
    the seeds. A link is listed when robots.txt allows it; it is fetched, once, when it is also
    new, passes the guards against endless URL spaces, would not log the crawl out
    (:func:`logs_out`), is within ``max_depth`` and may be worth fetching (SPEC 5).
    """
    plan = LinkPlan()
    too_deep = 0 < max_depth < depth
    queued: set[str] = set()
    for link in links:
        url = link.url
        if not robots(url):
            plan.drops.append(("robots", url))
            continue
        plan.listed.append((url, link.anchor))
        if url in queued or seen(url):
            continue
        rule = link.verdict.rule  # a guard: listed, never fetched
        if rule is None and logs_out(url, link.anchor):
            rule = "logout"
        if rule is None and too_deep:
            rule = "max-depth"
        if rule is None and not rules.worth_fetching(url):
            rule = "not-accepted"
        if rule is not None:
            plan.drops.append((rule, url))
            continue
        queued.add(url)
        plan.fetch.append(link)
    return plan


@dataclass(frozen=True)
class Explanation:
    """What the crawl would do with one URL, and the rule behind each answer."""

    url: str
    normalized: str | None
    fetched: str  # "yes" / "no"
    stored: str
    listed: str
    reasons: tuple[str, ...]


def _why(rule: str) -> str:
    return f"rule {rule}: {RULE_HELP.get(rule, rule)}"


def explain(rules: UrlRules, url: str, robots_allowed: bool | None = None) -> Explanation:
    """What the crawl would do with ``url`` as a link of a page: the same two steps as the crawl
    (:func:`resolve_links`, :func:`plan_links`), offline; ``robots_allowed`` is robots.txt's answer
    when known. Depth and duplicate content depend on the crawl itself and are not judged here."""
    found = resolve_links(url, None, [(url, "")], rules)
    if found.drops:
        rule = found.drops[0][0]
        normalized = rules.check(url).url
        return Explanation(
            url, normalized, "no", "no", "no", (f"rule {rule}: {RULE_HELP.get(rule, rule)}",)
        )
    (link,) = found.links
    normalized = link.url
    plan = plan_links(found.links, rules, robots=lambda u: robots_allowed is not False,
                      seen=lambda u: False, depth=0)  # fmt: skip
    if not plan.listed:
        return Explanation(url, normalized, "no", "no", "no", ("robots.txt disallows it",))
    reasons = [] if robots_allowed is not None else ["robots.txt not checked (use --robots)"]
    listed = "yes" if robots_allowed else "yes, unless robots.txt disallows it"
    guard = link.verdict.rule or ("logout" if logs_out(normalized) else None)
    if guard is not None:  # a guard: listed as a link, never fetched
        return Explanation(
            url,
            normalized,
            "no",
            "no",
            listed,
            (f"rule {guard}: {RULE_HELP.get(guard, guard)}", *reasons),
        )
    if rules.renders(normalized):
        reasons.append("rendered in a browser if it is an HTML page: a render-list pattern matches")
    fetched = "yes" if plan.fetch else "no"
    name = file_name(origin(normalized).path)
    if "." not in name.lstrip("."):
        accepted = {
            ext: rules.accepts(normalized, f"{name}.{ext}") for ext in ("html", "pdf", "txt")
        }
        stored = "decided after the download, by type: " + ", ".join(
            f"{name}.{ext} {'yes' if ok else 'no'}" for ext, ok in accepted.items()
        )
        reasons.append("no extension: fetched, as it may be an HTML page")
        return Explanation(url, normalized, fetched, stored, listed, tuple(reasons))
    accepted_now = rules.accepts(normalized, name)
    if accepted_now:
        how = (
            "the accept list is empty" if not rules.filters.accept else "an accept pattern matches"
        )
        reasons.append(f"accepted: {how}")
    elif plan.fetch:
        reasons.append("not accepted, but fetched for its links: its name may be an HTML page")
    else:
        reasons.append("rule not-accepted: neither accepted nor possibly an HTML page")
    return Explanation(
        url, normalized, fetched, "yes" if accepted_now else "no", listed, tuple(reasons)
    )
