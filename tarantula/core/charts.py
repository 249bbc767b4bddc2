"""The report's numbers and charts, written for people: counts, sizes, spans and times, and the
charts as inline SVG built from plain values (no script, no style sheet or font from elsewhere;
every label escaped).

>>> nice_ticks(7), nice_ticks(30), nice_ticks(1234), nice_ticks(0)
([0, 2, 4, 6, 8], [0, 10, 20, 30], [0, 500, 1000, 1500], [0, 1])
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

from tarantula.core.report import CLASSES

# -- formatting -----------------------------------------------------------------------------------


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def number(value: float) -> str:
    """A count with thousands separators.

    >>> number(1234567), number(0), number(2.5)
    ('1,234,567', '0', '2.5')
    """
    return f"{value:,}" if isinstance(value, int) else f"{value:,.3g}"


def size(count: float) -> str:
    """A number of bytes for people.

    >>> size(512), size(1536), size(12_345_678), size(3 * 2**30)
    ('512 B', '1.5 KiB', '11.8 MiB', '3.0 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def duration(seconds: float) -> str:
    """A span of time for people.

    >>> duration(1.25), duration(75), duration(3 * 3600 + 120), duration(2 * 86400 + 3600)
    ('1.2 s', '1 min 15 s', '3 h 02 min', '2 d 1 h')
    """
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(round(seconds), 60)
    hours, m = divmod(minutes, 60)
    days, h = divmod(hours, 24)
    if days:
        return f"{days} d {h} h"
    if hours:
        return f"{hours} h {m:02d} min"
    return f"{m} min {s} s"


def when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")


def clock(seconds: float) -> str:
    """An axis label: ``m:ss`` under an hour, ``h:mm`` beyond.

    >>> clock(0), clock(95), clock(7260)
    ('0:00', '1:35', '2:01 h')
    """
    seconds = round(seconds)
    if seconds < 3600:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d} h"


# -- charts ---------------------------------------------------------------------------------------

FONT = 'font-family="system-ui, sans-serif" font-size="12"'
TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400)  # fmt: skip


def nice_ticks(top: float, count: int = 5) -> list[int]:
    """Round axis ticks from 0 to at least ``top`` (whole numbers)."""
    if top <= 0:
        return [0, 1]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(math.ceil(top / step) + 1)]


def time_ticks(total: float) -> list[float]:
    """Ticks of a time axis: a round step, five to ten of them.

    >>> time_ticks(14), time_ticks(400)[:3]
    ([0, 2, 4, 6, 8, 10, 12, 14], [0, 60, 120])
    """
    step = next((s for s in TIME_STEPS if total / s <= 8), 86400 * math.ceil(total / 86400 / 8))
    return [i * step for i in range(math.floor(total / step) + 1)] or [0]


def _svg(width: int, height: int, label: str, body: Iterable[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}"'
        f' height="{height}" role="img" aria-label="{esc(label)}" {FONT}>'
        f"<title>{esc(label)}</title>{''.join(body)}</svg>"
    )


def _short(text: str, most: int = 30) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def status_colour(label: str) -> str:
    return {"2": "#2e7d32", "3": "#1565c0", "4": "#ef6c00", "5": "#c62828"}.get(
        label[:1], "#607d8b"
    )


def bar_chart(
    items: Iterable[tuple[str, int]],
    label: str,
    *,
    colour: str | Callable[[str], str] = "#546e7a",
    most: int = 20,
    sort: bool = True,
) -> str:
    """Horizontal bars, one per (name, value), largest first (``sort``); beyond ``most`` rows the
    rest are summed into one. ``colour`` is a colour or a function of the name. Each bar is a
    ``<g class="bar" data-label=... data-value=...>``.

    >>> svg = bar_chart([("html", 3), ("pdf", 1)], "Types")
    >>> svg.count('class="bar"'), 'data-label="html" data-value="3"' in svg
    (2, True)
    >>> bar_chart([], "Types")
    '<p class="empty">None.</p>'
    """
    rows = [(str(name), int(value)) for name, value in items if value]
    if sort:
        rows.sort(key=lambda r: (-r[1], r[0]))
    if len(rows) > most:
        rest = rows[most - 1 :]
        rows = [*rows[: most - 1], (f"{len(rest)} others", sum(v for _, v in rest))]
    if not rows:
        return '<p class="empty">None.</p>'
    left, area, row_height = 190, 360, 22
    width, height = left + area + 80, row_height * len(rows) + 8
    top = max(v for _, v in rows)
    body = []
    for i, (name, value) in enumerate(rows):
        y = 4 + i * row_height
        w = max(1.0, area * value / top)
        fill = colour(name) if callable(colour) else colour
        body.append(
            f'<g class="bar" data-label="{esc(name)}" data-value="{value}">'
            f"<title>{esc(name)}: {number(value)}</title>"
            f'<text x="{left - 8}" y="{y + 15}" text-anchor="end">{esc(_short(name))}</text>'
            f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{row_height - 6}" fill="{fill}"/>'
            f'<text x="{left + w + 6:.1f}" y="{y + 15}">{number(value)}</text></g>'
        )
    return _svg(width, height, label, body)


def column_chart(
    columns: Sequence[tuple[str, Mapping[str, int]]],
    label: str,
    categories: Sequence[tuple[str, str, str]] = CLASSES,
) -> str:
    """Stacked columns: for each (column label, {category: value}), one rectangle per category
    (``<rect class="segment" data-column=... data-category=... data-value=...>``), with a legend.

    >>> svg = column_chart([("0", {"stored": 1}), ("1", {"stored": 3, "failed": 1})], "Depth")
    >>> svg.count('class="segment"'), 'data-column="1" data-category="failed" data-value="1"' in svg
    (3, True)
    """
    if not columns:
        return '<p class="empty">None.</p>'
    left, bottom, plot_height = 56, 44, 200
    column_width = max(8, min(40, 560 // len(columns)))
    width = left + column_width * len(columns) + 20
    width = max(width, 460)
    height = 28 + plot_height + bottom
    ticks = nice_ticks(max(sum(v.values()) for _, v in columns))
    scale = plot_height / ticks[-1]
    base = 28 + plot_height
    body = []
    for tick in ticks:
        y = base - tick * scale
        body.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e0e0e0"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{number(tick)}</text>'
        )
    every = max(1, math.ceil(len(columns) / 20))
    for i, (name, values) in enumerate(columns):
        x = left + i * column_width + 2
        y = base
        for category, fill, _ in categories:
            value = values.get(category, 0)
            if not value:
                continue
            h = value * scale
            y -= h
            body.append(
                f'<rect class="segment" data-column="{esc(name)}" data-category="{category}"'
                f' data-value="{value}" x="{x}" y="{y:.1f}" width="{column_width - 4}"'
                f' height="{h:.1f}" fill="{fill}"><title>{esc(name)}: {number(value)} {category}'
                "</title></rect>"
            )
        if i % every == 0:
            body.append(
                f'<text x="{x + (column_width - 4) / 2:.1f}" y="{base + 16}" text-anchor="middle">'
                f"{esc(name)}</text>"
            )
    x = left
    for category, fill, _ in categories:
        body.append(
            f'<rect x="{x}" y="6" width="10" height="10" fill="{fill}"/>'
            f'<text x="{x + 14}" y="15">{esc(category)}</text>'
        )
        x += 22 + 7 * len(category)
    body.append(
        f'<text x="{left + (width - left) / 2:.0f}" y="{height - 6}" text-anchor="middle">'
        "link hops from a seed</text>"
    )
    return _svg(width, height, label, body)


def line_chart(
    series: Sequence[tuple[str, str, Sequence[tuple[float, float]]]],
    label: str,
    *,
    marks: Sequence[tuple[float, str]] = (),
    total: float | None = None,
) -> str:
    """Lines over crawl time: (name, colour, [(seconds, value)]) each a ``<polyline
    class="series" data-name=... data-last=...>``; ``marks`` are dashed lines where a later run
    starts.

    >>> svg = line_chart([("documents", "#000", [(0, 0), (10, 5)])], "Progress")
    >>> 'class="series" data-name="documents" data-last="5"' in svg
    True
    """
    if not any(points for _, _, points in series):
        return '<p class="empty">No samples.</p>'
    left, right, top_margin, bottom = 56, 20, 28, 40
    width, plot_height = 640, 220
    plot_width = width - left - right
    height = top_margin + plot_height + bottom
    x_max = max(total or 0.0, max((p[0] for _, _, pts in series for p in pts), default=0.0), 1.0)
    y_ticks = nice_ticks(max((p[1] for _, _, pts in series for p in pts), default=0))
    x_scale, y_scale = plot_width / x_max, plot_height / y_ticks[-1]
    base = top_margin + plot_height

    def xy(x: float, y: float) -> str:
        return f"{left + x * x_scale:.1f},{base - y * y_scale:.1f}"

    body = []
    for tick in y_ticks:
        ty = base - tick * y_scale
        body.append(
            f'<line x1="{left}" x2="{width - right}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#e0e0e0"/>'
            f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end">{number(tick)}</text>'
        )
    for when_ in time_ticks(x_max):
        tx = left + when_ * x_scale
        body.append(
            f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{base}" y2="{base + 4}" stroke="#757575"/>'
            f'<text x="{tx:.1f}" y="{base + 17}" text-anchor="middle">{clock(when_)}</text>'
        )
    body.append(
        f'<line x1="{left}" x2="{width - right}" y1="{base}" y2="{base}" stroke="#757575"/>'
        f'<text x="{left + plot_width / 2:.0f}" y="{height - 4}" text-anchor="middle">'
        "crawl time (the runs end to end)</text>"
    )
    for x, text in marks:
        px = left + x * x_scale
        body.append(
            f'<g class="mark"><line x1="{px:.1f}" x2="{px:.1f}" y1="{top_margin}" y2="{base}"'
            f' stroke="#9e9e9e" stroke-dasharray="4 3"/><text x="{px + 3:.1f}"'
            f' y="{top_margin + 12}" fill="#616161">{esc(text)}</text></g>'
        )
    legend_x = left
    for name, colour, points in series:
        if not points:
            continue
        last = points[-1][1]
        body.append(
            f'<polyline class="series" data-name="{esc(name)}" data-last="{number(last)}"'
            f' fill="none" stroke="{colour}" stroke-width="2"'
            f' points="{" ".join(xy(x, y) for x, y in points)}"/>'
        )
        if len(points) == 1:
            cx, cy = xy(*points[0]).split(",")
            body.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"/>')
        body.append(
            f'<rect x="{legend_x}" y="8" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="17">{esc(name)}</text>'
        )
        legend_x += 30 + 7 * len(name)
    return _svg(width, height, label, body)


def depth_columns(
    depths: Mapping[tuple[int, str], int], most: int = 40
) -> list[tuple[str, dict[str, int]]]:
    """The depth histogram's columns; beyond ``most`` depths, depths are grouped in equal ranges.

    >>> depth_columns({(0, "stored"): 1, (2, "queued"): 4})
    [('0', {'stored': 1}), ('1', {}), ('2', {'queued': 4})]
    >>> [name for name, _ in depth_columns({(0, "stored"): 1, (99, "stored"): 1}, most=10)][:2]
    ['0-9', '10-19']
    """
    if not depths:
        return []
    deepest = max(d for d, _ in depths)
    width = max(1, math.ceil((deepest + 1) / most))
    columns: list[tuple[str, dict[str, int]]] = [
        (str(i * width) if width == 1 else f"{i * width}-{i * width + width - 1}", {})
        for i in range(deepest // width + 1)
    ]
    for (depth, category), count in depths.items():
        values = columns[depth // width][1]
        values[category] = values.get(category, 0) + count
    return columns
