"""Scrapy settings of the Tarantula project. No logic: values only.

Per-crawl values (concurrency, delays, limits, logging) are set from the configuration file by the
spider (see :mod:`tarantula.configure`); what stays here is fixed for every crawl.
"""

from scrapy.settings import default_settings as _scrapy

from tarantula.defaults import *  # noqa: F403

BOT_NAME = "tarantula"
SPIDER_MODULES = ["tarantula.spiders"]
NEWSPIDER_MODULE = "tarantula.spiders"
COMMANDS_MODULE = "tarantula.commands"

# Off: both run code or open ports that a crawler has no use for (the remote control runs any
# Python sent to it).
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
EXTENSIONS = {
    # Signal handlers run in this order. The helpers' stats of a crawl on N processes are read
    # first, so that all after count the whole crawl. The status line goes next: it holds the
    # terminal's log to warnings before LogStats's first line, and is taken down before the
    # summary is logged; the report, which shows the summary, comes after it.
    "tarantula.extensions.processes.ProcessStats": -200,
    "tarantula.extensions.status.CrawlStatus": -100,
    "tarantula.extensions.summary.CrawlSummary": 100,
    "tarantula.extensions.report.CrawlReport": 200,
    # JOBDIR's spider state: the crawl state lives in the repository instead.
    "scrapy.extensions.spiderstate.SpiderState": None,
}
# Scrapy imports every component its settings name, switched off (None) or not, before it asks
# whether it is on. The remote control's module imports aiohttp, the cookies middleware's
# tldextract and requests: a fifth of a second of every start (and of every command), for parts a
# crawl never uses. They are left out of Scrapy's base lists instead (as Scrapy 2.19 names them).
_not_loaded = {
    "scrapy.extensions.remote_control.RemoteControl",
    "scrapy.extensions.telnet.TelnetConsole",
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware",
    "scrapy.downloadermiddlewares.httpproxy.HttpProxyMiddleware",
}
EXTENSIONS_BASE = {k: v for k, v in _scrapy.EXTENSIONS_BASE.items() if k not in _not_loaded}
DOWNLOADER_MIDDLEWARES_BASE = {
    k: v for k, v in _scrapy.DOWNLOADER_MIDDLEWARES_BASE.items() if k not in _not_loaded
}
# Spider middlewares whose work the spider does already, or that would work for nothing, and whose
# layer every request and item would pass: the spider sets each request's depth and judges URL
# length itself; the scheduler keeps a request's URL, not the request, and builds the request
# again when the URL's turn comes, so a Referer header set on the spider's request is never sent.
SPIDER_MIDDLEWARES = {
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
    "scrapy.spidermiddlewares.referer.RefererMiddleware": None,
}

TWISTED_DNS_RESOLVER = "tarantula.resolver.MappedResolver"

# Scrapy's HTTP/1.1 handler, telling politeness when each request's bytes really went out.
DOWNLOAD_HANDLERS = {
    "http": "tarantula.handlers.WireHandler",
    "https": "tarantula.handlers.WireHandler",
}

ROBOTSTXT_OBEY = True
ROBOTSTXT_USER_AGENT = "tarantula"
ROBOTSTXT_PARSER = "scrapy.robotstxt.ProtegoRobotParser"

# Politeness is exact, not randomized: `delay` is a minimum.
DOWNLOAD_DELAY_JITTER = 0
# A crawler of the open web keeps no session state and uses no proxy from the environment.
COOKIES_ENABLED = False
HTTPPROXY_ENABLED = False

SCHEDULER = "tarantula.scheduler.FrontierScheduler"

DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware": None,
    "tarantula.downloadermiddlewares.scope.ScopeMiddleware": 50,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "tarantula.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 100,
    "tarantula.downloadermiddlewares.politeness.PolitenessMiddleware": 650,
    # SPEC 13: with <authentication-options>, configure.py adds AuthMiddleware (620: after the
    # politeness middleware has seen the answer) and CookieFileMiddleware (700, Scrapy's cookie
    # middleware's place; Scrapy's is left out of the base list above).
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "tarantula.downloadermiddlewares.redirect.RedirectMiddleware": 600,
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "tarantula.downloadermiddlewares.redirect.MetaRefreshMiddleware": 580,
    # Sees the final, decompressed response (after redirects and HttpCompressionMiddleware).
    "tarantula.downloadermiddlewares.render.RenderMiddleware": 580,
    # Top of the chain: the request as sent, every answer as received (see its docstring).
    "tarantula.downloadermiddlewares.warc.WarcMiddleware": 950,
    # Reads sitemaps once redirects are followed and the body is decompressed.
    "tarantula.downloadermiddlewares.sitemap.SitemapMiddleware": 570,
}
ITEM_PIPELINES = {
    "tarantula.pipelines.mirror.MirrorPipeline": 300,
    "tarantula.pipelines.index.IndexPipeline": 400,
    "tarantula.pipelines.browse.BrowsePipeline": 500,
}

# Network faults are counted and reported, not errors of the crawler: keep ERROR for real bugs.
LOG_FORMATTER = "tarantula.logformatter.LogFormatter"
RETRY_GIVE_UP_LOG_LEVEL = "WARNING"
LOG_LEVEL = "INFO"
STATS_CLASS = "tarantula.stats.StatsCollector"  # Scrapy's, without a hook on every call
STATS_DUMP = False  # the crawl summary replaces the raw dump (it is still logged at level 2)

FEED_EXPORT_ENCODING = "utf-8"

# Scrapy runs this many tasks per response to push its outputs through the item pipelines in
# parallel. Tarantula's pipelines are synchronous, so the tasks only cost time (about a sixth of
# the crawl's CPU with Scrapy's 100).
CONCURRENT_ITEMS = 1

# Scrapy waits 180 s by default; a crawler of many hosts gives up on a silent one sooner.
DOWNLOAD_TIMEOUT = 30

SPIDER_CONTRACTS = {"tarantula.contracts.DemoContract": 10}
