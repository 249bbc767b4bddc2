"""The ``tarantula`` command: Scrapy's commands with Tarantula's settings, from any folder (SPEC 1).

``pip install`` of the project puts it on the ``PATH``; it needs no checkout and no ``scrapy.cfg``:

    tarantula crawl CONF [-a recrawl=yes] [-s NAME=VALUE]   # = scrapy crawl tarantula -a conf=CONF
    tarantula watch CONF                                    # = scrapy watch CONF
    tarantula explain CONF URL... [--robots]                # = scrapy explain CONF URL...
    tarantula verify CONF                                   # = scrapy verify CONF
    tarantula merge CONF FOLDER...                          # = scrapy merge CONF FOLDER...
    tarantula scrapyd | check                               # = scrapy scrapyd, scrapy check tarantula

Any other Scrapy command is passed on as it is (``tarantula version``, ``tarantula list``). The
settings are the project's (``SCRAPY_SETTINGS_MODULE=tarantula.settings``, unless the environment
names others), which is what makes Scrapy take the folder for the project's, wherever it is run.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.utils.project import ENVVAR, inside_project

if TYPE_CHECKING:
    import argparse

#: Tarantula's own commands: what each takes, and what it does.
COMMANDS = {
    "crawl": ("CONF [-a recrawl=yes] [-s NAME=VALUE]", "a crawl, a resume or a recrawl"),
    "watch": ("CONF", "service mode: recrawl every `period` hours"),
    "explain": ("CONF URL... [--robots]", "what the crawl does, and did, with a URL"),
    "verify": ("CONF", "is the repository whole?"),
    "merge": ("CONF FOLDER...", "a shared crawl's worker folders, into its repository"),
    "scrapyd": ("", "scrapyd for this project"),
    "check": ("", "the spider's contracts, offline"),
}


def usage() -> str:
    """
    >>> print(usage().splitlines()[2])
      tarantula crawl CONF [-a recrawl=yes] [-s NAME=VALUE]  a crawl, a resume or a recrawl
    """
    width = max(len(f"{name} {args}") for name, (args, _) in COMMANDS.items())
    lines = ["usage: tarantula COMMAND ...", ""]
    lines += [
        f"  tarantula {f'{name} {args}':<{width}}  {text}"
        for name, (args, text) in COMMANDS.items()
    ]
    lines += ["", "Other Scrapy commands are passed on (tarantula version, tarantula list)."]
    return "\n".join(lines)


def scrapy_argv(argv: list[str]) -> list[str] | None:
    """The ``scrapy`` command line that ``tarantula`` ``argv`` stands for; None when it is not a
    command line (no command, or a crawl without its configuration).

    >>> scrapy_argv(["crawl", "c.conf", "-a", "recrawl=yes"])
    ['scrapy', 'crawl', 'tarantula', '-a', 'conf=c.conf', '-a', 'recrawl=yes']
    >>> scrapy_argv(["verify", "c.conf"]), scrapy_argv(["check"]), scrapy_argv(["crawl"])
    (['scrapy', 'verify', 'c.conf'], ['scrapy', 'check', 'tarantula'], None)
    """
    if not argv or argv[0].startswith("-"):
        return None
    command, rest = argv[0], argv[1:]
    if command == "crawl":
        conf = next((i for i, arg in enumerate(rest) if not arg.startswith("-")), None)
        if conf is None or (conf > 0 and rest[conf - 1] in ("-a", "-s", "-o", "-O", "-t")):
            return None
        return ["scrapy", "crawl", "tarantula", "-a", f"conf={rest[conf]}",
                *rest[:conf], *rest[conf + 1 :]]  # fmt: skip
    if command == "check":
        return ["scrapy", "check", "tarantula", *rest]
    return ["scrapy", command, *rest]


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    command_line = scrapy_argv(argv)
    if command_line is None:
        asked = argv[:1] in (["-h"], ["--help"])
        print(usage(), file=sys.stdout if asked else sys.stderr)
        sys.exit(0 if asked else 2)
    os.environ.setdefault(ENVVAR, "tarantula.settings")
    from scrapy.cmdline import execute

    execute(command_line)


class ScrapyCrawl(ScrapyCrawlCommand):
    """``scrapy crawl`` wherever Scrapy finds no project (the ``crawl`` entry point of the
    ``scrapy.commands`` group): there Scrapy itself only says that the command "is not available
    from this location"; this says what to run instead. Inside any project it is Scrapy's own
    command, unchanged (Tarantula's project has its own, from ``COMMANDS_MODULE``)."""

    requires_project = False

    def __init__(self) -> None:
        super().__init__()
        # Outside a project, no crawler process: its start-up banner would come first.
        self.requires_crawler_process = inside_project()

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if inside_project():
            super().run(args, opts)
            return
        print(
            "scrapy crawl runs the spiders of a Scrapy project, and there is none here. For a "
            "Tarantula crawl run `tarantula crawl CONF`, from any folder (or set "
            f"{ENVVAR}=tarantula.settings for scrapy's own commands).",
            file=sys.stderr,
        )
        self.exitcode = 2
