"""Defaults of every ``TARANTULA_*`` setting (Scrapy settings, settable with ``-s NAME=VALUE``).

Crawl behaviour comes from the configuration file; these settings only tell the Scrapy side where
to find it and how the process around the crawl behaves.
"""

from __future__ import annotations

#: Path of the configuration file when no ``-a conf=PATH`` is given.
TARANTULA_CONF: str | None = None

#: Host-name mapping used instead of DNS, like curl's ``--resolve``: ``"HOST=ADDRESS,..."`` or a
#: dict. ``HOST`` may be ``*`` (any name) or ``*.suffix``. Config files add to it (key ``resolve``).
TARANTULA_RESOLVE: dict[str, str] | str = {}

#: When true, a name that ``TARANTULA_RESOLVE`` does not map fails at once, without a DNS query.
TARANTULA_RESOLVE_ONLY: bool = False

#: Seconds between two commits of the crawl state: at most this much work is lost in a crash, and
#: a stored document reaches index.txt within this time. Each commit syncs the file system once
#: (the mirror's new files), which is most of its cost.
TARANTULA_COMMIT_INTERVAL: float = 1.0

#: Seconds between two snapshots of a run's counters for the report (more when writing them takes
#: long): a process killed before its run's end is counted in the report up to its last one.
TARANTULA_SNAPSHOT_INTERVAL: float = 5.0

#: Keep the crawl state in memory instead of ``<repository>/.tarantula/state.db`` (nothing
#: survives the process; ``scrapy check`` uses this).
TARANTULA_STATE_IN_MEMORY: bool = False

#: Bytes after which a WARC file (``warc = yes``) is closed and the next one started; a file holds
#: at least one exchange, so a larger record makes a larger file.
TARANTULA_WARC_MAX_SIZE: int = 1_000_000_000

#: Seconds a rendering (``render-list``) may take beyond twice ``render-wait`` before it is given
#: up and the page kept as served: a script that loops forever freezes the page, and
#: scrapy-playwright's last read of it has no time limit of its own.
TARANTULA_RENDER_GRACE: float = 40.0
