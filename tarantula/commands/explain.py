"""``scrapy explain CONF URL...``: what the crawl would do with each URL, and which rule decided.

Like HTTrack's ``--why`` or Heritrix's decide-rule logs, for tuning scope and filters: for each URL
it prints the normalized form, whether it would be fetched, stored (and indexed) and listed as a
link, and the rule behind each answer. It needs no network unless ``--robots`` is given, which
fetches the hosts' robots.txt (honouring the config's ``resolve`` mapping) and applies it as the
crawl would. Depth and duplicate content depend on the crawl itself and are not judged by the
rules; the last line says what the crawl in the configured repository met for the URL: stored as,
duplicate of, failed with (and when), and which page linked to it; or, for a link it left, the
rule and the first page it met the link on (:mod:`tarantula.store.folder.met`).
"""

from __future__ import annotations

import functools
import http.client
import ssl
import time
from typing import TYPE_CHECKING

from protego import Protego
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from tarantula.commands import load_or_report
from tarantula.core.config import CrawlConfig
from tarantula.core.links import explain
from tarantula.core.requisites import Requisite
from tarantula.core.rules import UrlRules
from tarantula.core.scope import origin
from tarantula.core.urls import UrlRejected, join_url, normalize_url
from tarantula.downloadermiddlewares.robotstxt import ROBOTS_MAX_BYTES, robots_rules, site_key
from tarantula.resolver import lookup
from tarantula.store import StoreUnavailable, url_facts, url_requisite

if TYPE_CHECKING:
    import argparse


@functools.cache
def _unverified() -> ssl.SSLContext:
    """The crawl does not check certificates (Scrapy's default), and neither does explain. Made
    when first used, without the system's CA certificates (``create_default_context`` loads
    them: some 20 ms at every start of every command, the crawl's included)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


#: RFC 9309 2.3.1.2: at least five redirects are followed for robots.txt.
ROBOTS_REDIRECTS = 5


def fetch_robots(config: CrawlConfig, url: str) -> Protego:
    """The robots.txt rules of ``url``'s site, read as the crawl reads them (RFC 9309): the
    config's user agent and host-name mapping, up to five redirects, the same rules for failures
    (:func:`~tarantula.downloadermiddlewares.robotstxt.robots_rules`), the first 500 KiB."""
    target = f"{site_key(url)}/robots.txt"
    status: int | None = None
    body = b""
    for _ in range(ROBOTS_REDIRECTS + 1):
        status, body, location = _get(config, target)
        if status is None or status not in (301, 302, 303, 307, 308) or not location:
            break
        try:
            target = normalize_url(join_url(target, location))
        except UrlRejected:
            break  # a redirect to nowhere ends without a file: 3xx, no restrictions
    return Protego.parse(robots_rules(status, body).decode("utf-8", "ignore"))


def _get(config: CrawlConfig, url: str) -> tuple[int | None, bytes, str | None]:
    """One GET of ``url`` (status, body, Location); status None when there was no answer."""
    host, port, path, _ = origin(url)
    address = lookup(dict(config.resolve), host.strip("[]"))
    if address is None and config.resolve_only:
        return None, b"", None
    connection: http.client.HTTPConnection
    if url.startswith("https:"):
        connection = http.client.HTTPSConnection(
            address or host.strip("[]"), port, timeout=10, context=_unverified()
        )
    else:
        connection = http.client.HTTPConnection(address or host.strip("[]"), port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": url.partition("://")[2].partition("/")[0],
                                                 "User-Agent": config.user_agent})  # fmt: skip
        response = connection.getresponse()
        return response.status, response.read(ROBOTS_MAX_BYTES), response.getheader("Location")
    except OSError:
        return None, b"", None
    finally:
        connection.close()


def what_the_crawl_met(config: CrawlConfig, url: str) -> str:
    """One line: what the crawl in ``config``'s repository did with ``url`` (SPEC 12).

    >>> from pathlib import Path
    >>> what_the_crawl_met(CrawlConfig(path=Path("/nowhere/c.conf"), starting_points=("http://h/",)), "http://h/")
    'has not run yet (no crawl state)'
    """
    try:
        found = url_facts(config, url)
    except StoreUnavailable as exc:
        return f"cannot be told: {exc}"
    if isinstance(found, str):
        return found
    if found.state == "never met":
        return "never met it"
    if found.state == "dropped":
        when = f" at {stamp(found.when)}" if found.when else ""
        said = f"left it by rule {found.outcome}: met on {found.referrer}{when}"
        if found.trap is not None:
            pattern, pages = found.trap
            said += f"; URLs like {pattern} brought duplicates: {', '.join(pages)}"
        return said
    if found.state != "done":
        return f"has it {found.state}, not handled yet"
    when = f" at {stamp(found.when)}" if found.when else ""
    near = found.near_duplicate_of
    nearly = f"a near-duplicate of {near[0]} ({near[1]} bits apart)" if near else ""
    if found.stored_as is not None:
        said = f"stored it as {found.stored_as}{when}" + (f", {nearly}" if near else "")
    elif found.duplicate_of is not None:
        said = f"found it a duplicate of {found.duplicate_of}{when}"
    elif near is not None:
        said = f"found it {nearly}, not stored (near-duplicates = skip){when}"
    else:
        said = f"{_OUTCOMES.get(found.outcome or '', 'failed with')} {found.outcome}{when}"
    if found.depth is None:  # a shared crawl's worker keeps the outcome alone
        return said
    source = f"linked from {found.referrer}, " if found.referrer else ""
    return f"{said} ({source or ('a seed, ' if found.depth == 0 else '')}depth {found.depth})"


#: How explain words an outcome that is not a stored document or a duplicate.
_OUTCOMES = {
    "filtered": "did not fetch it:",
    "not-accepted": "parsed it, did not store it:",
    "redirected": "was redirected:",
    "max-document-size": "did not store it:",
    "host-dropped": "did not fetch it:",
    "over-limit": "did not fetch it:",
    "unsafe-path": "did not store it:",
    "unchanged": "kept its copy:",
}


def requisite_line(requisite: Requisite) -> str:
    """What the crawl did with a page requisite (SPEC 6), and for which page.

    >>> requisite_line(Requisite("http://h/s.css", "http://h/", "h/s.css"))
    'of the page http://h/: stored as h/s.css (not in the index)'
    >>> requisite_line(Requisite("http://h/s.css", "http://h/", outcome="http-404"))
    'of the page http://h/: failed with http-404'
    """
    if requisite.path is not None:
        what = f"stored as {requisite.path} (not in the index)"
    elif requisite.outcome is not None:
        what = f"{_OUTCOMES.get(requisite.outcome, 'failed with')} {requisite.outcome}"
    else:
        what = "wanted, not fetched yet"
    return f"of the page {requisite.page}: {what}"


def stamp(epoch: float) -> str:
    """A time as the report writes it, in UTC."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[options] CONF URL [URL ...]"

    def short_desc(self) -> str:
        return "Say whether URLs would be fetched, stored and listed, and which rule decided"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--robots", action="store_true", help="fetch robots.txt and apply it")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) < 2:
            raise UsageError("give the configuration file and at least one URL")
        config = load_or_report(self, args[0])
        if config is None:
            return
        rules = UrlRules(config)
        robots: dict[str, Protego] = {}
        token = self.settings.get("ROBOTSTXT_USER_AGENT") if self.settings else None
        for url in args[1:]:
            allowed = None
            verdict = rules.check(url)
            if opts.robots and verdict.url is not None and verdict.listed:
                key = site_key(verdict.url)  # robots.txt is per scheme, host and port
                if key not in robots:
                    robots[key] = fetch_robots(config, verdict.url)
                allowed = robots[key].can_fetch(verdict.url, token or config.user_agent)
            e = explain(rules, url, allowed)
            print(url)
            print(f"  normalized  {e.normalized or '-'}")
            print(f"  fetched     {e.fetched}")
            print(f"  stored      {e.stored}")
            print(f"  listed      {e.listed}")
            for reason in e.reasons:
                print(f"  because     {reason}")
            if e.normalized is not None:
                met = what_the_crawl_met(config, e.normalized)
                try:
                    requisite = url_requisite(config, e.normalized)
                except StoreUnavailable:
                    requisite = None  # said on the crawl's line
                if requisite is None or met != "never met it":  # else met as a requisite only
                    print(f"  the crawl   {met}")
                if requisite is not None:
                    print(f"  requisite   {requisite_line(requisite)}")
