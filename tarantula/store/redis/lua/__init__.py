"""The Lua scripts of a crawl shared through Redis, one ``.lua`` file each (package data).

A script is its file after the libraries it uses: ``time.lua`` (the server's clock, times written
with microseconds), ``frontier.lua`` (the frontier's keys, configuration, record codec and host
placement), ``runs.lua`` and ``documents.lua``; each file's first lines say what it is given
(``KEYS``, ``ARGV``), what it returns, and which files come before it.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def _read(name: str) -> str:
    return files(__name__).joinpath(f"{name}.lua").read_text(encoding="utf-8")


def lua(*names: str) -> str:
    """The script made of the files ``names``, in that order (libraries first)."""
    return "\n".join(_read(name) for name in names)
