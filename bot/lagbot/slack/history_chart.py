"""Charts of the long history: a group's lag over days or weeks (`lagbot history`), and the month of the worst groups
(the weekly report). PNG bytes drawn with matplotlib's Agg canvas (no pyplot, no display, no global state), imported
when drawn: the CLI and the bot pay for matplotlib only when they draw.

Unknown lag (an unreadable group) is a gap, never a zero. Names are shown literally (lagbot.slack.digest.legend_label).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any

from lagbot.core import messages
from lagbot.slack.digest import legend_label
from lagbot.slack.wording import digests as wording

MOST_LINES = 5


def span_chart(
    series: Mapping[str, Sequence[tuple[float, int | None]]], *, since: float, until: float, tz: tzinfo, title: str
) -> bytes:
    """A PNG line chart of lag (messages) over [since, until], one line per series (the first five), dates on x."""
    from matplotlib import dates
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    figure = Figure(figsize=(11, 4.5), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    lines, labels = [], []
    for label, points in list(series.items())[:MOST_LINES]:
        times: Any = [datetime.fromtimestamp(at, tz) for at, _ in points]
        values = [math.nan if lag is None else float(lag) for _, lag in points]
        (line,) = axes.plot(times, values, linewidth=1.2)
        lines.append(line)
        labels.append(legend_label(label))
    if lines:
        axes.legend(lines, labels, loc="upper left", fontsize="small")
    else:
        axes.text(0.5, 0.5, wording.digest_chart_empty(), transform=axes.transAxes, ha="center", va="center")
    start: Any = datetime.fromtimestamp(since, tz)
    end: Any = datetime.fromtimestamp(until, tz)
    axes.set_xlim(start, end)
    axes.set_ylim(0, max(axes.get_ylim()[1], 10))
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    untyped: Any = dates  # matplotlib.dates has no annotations
    axes.xaxis.set_major_locator(untyped.AutoDateLocator(tz=tz, maxticks=10))
    axes.xaxis.set_major_formatter(untyped.DateFormatter("%m-%d", tz=tz))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: messages.count(value)))
    axes.set(title=title, xlabel=wording.history_chart_x_axis(tz), ylabel=wording.digest_chart_axes(tz)[1])
    axes.grid(alpha=0.3)
    out = io.BytesIO()
    figure.savefig(out, format="png", facecolor="white")
    return out.getvalue()
