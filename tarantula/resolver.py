"""Host-name resolution from a fixed mapping, like curl's ``--resolve``.

Scrapy installs one resolver on the reactor per process, from ``TWISTED_DNS_RESOLVER``; this one
answers from ``TARANTULA_RESOLVE`` first and falls back to Scrapy's caching threaded resolver. With
``TARANTULA_RESOLVE_ONLY`` (or the config key ``resolve-only``) an unmapped name fails at once with
a DNS lookup error, and no DNS query ever leaves the machine. A configuration file is read after the
resolver exists, so the spider adds the config's ``resolve`` entries with :func:`add_mappings`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.base import ReactorBase


def parse_mapping(value: Mapping[str, str] | str | None) -> dict[str, str]:
    """``"a.test=127.0.0.1, *.b.test=::1"`` (or a dict) -> ``{"a.test": "127.0.0.1", ...}``.

    >>> parse_mapping("A.test=127.0.0.1, *=::1")
    {'a.test': '127.0.0.1', '*': '::1'}
    """
    if not value:
        return {}
    if isinstance(value, str):
        pairs = (item.partition("=")[::2] for item in value.split(",") if item.strip())
        value = {host: address for host, address in pairs}
    return {host.strip().lower(): address.strip() for host, address in value.items()}


def lookup(mapping: Mapping[str, str], name: str) -> str | None:
    """The address mapped to ``name``: an exact entry, else the longest ``*.suffix``, else ``*``.

    >>> m = {"a.test": "127.0.0.2", "*.test": "127.0.0.3", "*": "127.0.0.4"}
    >>> lookup(m, "A.test."), lookup(m, "b.a.test"), lookup(m, "example.org"), lookup({}, "x")
    ('127.0.0.2', '127.0.0.3', '127.0.0.4', None)
    """
    name = name.lower().rstrip(".")
    if name in mapping:
        return mapping[name]
    labels = name.split(".")
    for i in range(1, len(labels)):
        address = mapping.get("*." + ".".join(labels[i:]))
        if address is not None:
            return address
    return mapping.get("*")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


@implementer(IResolverSimple)
class MappedResolver(CachingThreadedResolver):
    """IPv4/IPv6 literal mapping in front of Scrapy's caching threaded resolver."""

    def __init__(
        self,
        reactor: ReactorBase,
        cache_size: int,
        timeout: float,
        mapping: Mapping[str, str] | None = None,
        only: bool = False,
    ) -> None:
        super().__init__(reactor, cache_size, timeout)
        self.mapping: dict[str, str] = dict(mapping or {})
        self.only = only

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> MappedResolver:
        settings = crawler.settings
        cache = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        return cls(
            reactor,
            cache,
            settings.getfloat("DNS_TIMEOUT"),
            parse_mapping(settings.get("TARANTULA_RESOLVE")),
            settings.getbool("TARANTULA_RESOLVE_ONLY"),
        )

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[Any]:
        address = lookup(self.mapping, name)
        if address is not None:
            return defer.succeed(address.strip("[]"))
        if self.only and not _is_ip(name):
            return defer.fail(DNSLookupError(f"{name}: not in the resolve mapping (resolve-only)"))
        return super().getHostByName(name, timeout)


def installed_resolver() -> MappedResolver | None:
    from twisted.internet import reactor

    resolver = getattr(reactor, "resolver", None)
    return resolver if isinstance(resolver, MappedResolver) else None


def add_mappings(pairs: Iterable[tuple[str, str]], only: bool) -> bool:
    """Add ``(host, address)`` pairs to the reactor's resolver; False when it is not a MappedResolver."""
    resolver = installed_resolver()
    if resolver is None:
        return False
    resolver.mapping.update((host.lower(), address) for host, address in pairs)
    resolver.only = resolver.only or only
    return True


def host_resolver_rules(mapping: Mapping[str, str], only: bool) -> str:
    """The same mapping for Chromium's ``--host-resolver-rules``: a browser that renders pages
    (SPEC 10) resolves names itself, not through the reactor.

    >>> host_resolver_rules({"a.test": "127.0.0.1", "*.b.test": "::1"}, only=True)
    'MAP a.test 127.0.0.1, MAP *.b.test [::1], MAP * ~NOTFOUND'
    """
    rules = []
    # Chromium applies the first rule that matches: exact names, then longer suffixes, then "*".
    for host, address in sorted(
        mapping.items(), key=lambda item: (item[0].startswith("*"), -len(item[0]))
    ):
        bare = address.strip("[]")
        rules.append(f"MAP {host} {f'[{bare}]' if ':' in bare else bare}")
    if only and "*" not in mapping:
        rules.append("MAP * ~NOTFOUND")
    return ", ".join(rules)
