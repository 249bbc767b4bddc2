# The C pass of tarantula/core/reader.py (_reader.c).
from collections.abc import Callable
from typing import Any

def read(
    text: str, refs: bool, /
) -> tuple[str | None, str | None, list[tuple[str, str]], list[Any] | None] | None: ...
def setup(
    ref: type,
    tag_refs: Callable[..., Any],
    anchor_text: Callable[[str], str],
    title_of: Callable[[str], str | None],
    short_text: Callable[[str | None], str],
    unescape: Callable[[str], str],
    max_text: int,
    /,
) -> None: ...
