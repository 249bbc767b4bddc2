"""Crawl scope (SPEC 4): which normalized URLs the crawl may enter, computed from the seeds.

Every function here takes *normalized* URLs (see :mod:`tarantula.core.urls`), so the host is
already lower-case, default ports are gone and the path starts with ``/``.

>>> in_scope = build_scope("domain-scope", ["http://www.example.com/", "http://a.b.example.org/"])
>>> [in_scope(origin(u)) for u in ("http://example.com/x", "http://deep.example.com/", "http://b.example.org/")]
[True, True, False]
>>> in_scope = build_scope("path-scope", ["http://h.org/docs/index.html"])
>>> in_scope(origin("http://h.org/docs/a/b.html")), in_scope(origin("http://h.org/other.html"))
(True, False)

http and https on their default ports are one site; another port is another site:

>>> in_scope = build_scope("host-scope", ["http://www.csd.uoc.gr/"])
>>> [in_scope(origin(u)) for u in ("https://www.csd.uoc.gr/x", "https://www.csd.uoc.gr:8443/", "http://www.csd.uoc.gr:443/")]
[True, False, False]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

ScopeTest = Callable[["Origin"], bool]

_DEFAULT_PORTS = {"http": 80, "https": 443}


class Origin(NamedTuple):
    """The parts of a normalized URL that scope rules compare.

    ``site`` is the host, with ``:port`` only when the port is not the scheme's default: http and
    https on their default ports are one site (SPEC 4), as for wget and a browser's user.
    """

    host: str
    port: int
    path: str
    site: str


def origin(url: str) -> Origin:
    """Split a normalized URL into host, effective port and path (query excluded).

    >>> origin("https://[::1]:8443/a?b")
    Origin(host='[::1]', port=8443, path='/a', site='[::1]:8443')
    >>> origin("http://example.com/")
    Origin(host='example.com', port=80, path='/', site='example.com')
    """
    scheme, _, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    path = slash + path.partition("?")[0]
    host, port = netloc, _DEFAULT_PORTS.get(scheme, 0)
    colon = netloc.rfind(":")
    if colon > netloc.rfind("]"):
        host, port = netloc[:colon], int(netloc[colon + 1 :])
    # A normalized URL names its port only when it is not the scheme's default.
    site = netloc if port != _DEFAULT_PORTS.get(scheme) else host
    return Origin(host, port, path or "/", site)


def seed_domains(hosts: Iterable[str]) -> frozenset[str]:
    """The seeds-domains-set: hosts without a leading ``www.``, keeping no subdomain of another member.

    >>> sorted(seed_domains(["foo1.domain.com", "foo2.foo1.domain.com", "www.foo3.foo1.domain.com"]))
    ['foo1.domain.com']
    """
    domains = {h[4:] if h.startswith("www.") else h for h in hosts}
    return frozenset(d for d in domains if not any(d.endswith("." + o) for o in domains if o != d))


def host_in_domains(host: str, domains: frozenset[str]) -> bool:
    """True when ``host`` is a member of ``domains`` or a subdomain of one."""
    if host in domains:
        return True
    # Walk up the labels: a.b.c.example.com -> b.c.example.com -> ... (cheaper than testing every member).
    dot = host.find(".")
    while dot != -1:
        host = host[dot + 1 :]
        if host in domains:
            return True
        dot = host.find(".")
    return False


def seed_directory(path: str) -> str:
    """The seed's path up to and including its last ``/``.

    >>> seed_directory("/path/index.html"), seed_directory("/index.html"), seed_directory("/a/b/")
    ('/path/', '/', '/a/b/')
    """
    return path[: path.rfind("/") + 1]


def build_scope(kind: str, seeds: Iterable[str]) -> ScopeTest:
    """Return a test that says whether a normalized URL (given as its :func:`origin`) is inside
    the scope ``kind`` of ``seeds``.

    ``kind`` is one of free-spanning, domain-scope, host-scope, path-scope; ``seeds`` are normalized.
    """
    origins = [origin(s) for s in seeds]
    if kind == "free-spanning":
        return lambda o: True
    if kind == "domain-scope":
        domains = seed_domains(o.host for o in origins)
        return lambda o: host_in_domains(o.host, domains)
    if kind == "host-scope":
        sites = frozenset(o.site for o in origins)
        return lambda o: o.site in sites
    if kind == "path-scope":
        dirs: dict[str, list[str]] = {}
        for o in origins:
            dirs.setdefault(o.site, []).append(seed_directory(o.path))

        def in_path_scope(o: Origin) -> bool:
            return any(o.path.startswith(d) for d in dirs.get(o.site, ()))

        return in_path_scope
    raise ValueError(f"unknown scope {kind!r}")
