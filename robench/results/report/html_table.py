"""A report as a small HTML table, for Jupyter (`Report._repr_html_`; docs/python-api.md, "In
Jupyter"). Every text is HTML-escaped: names come from suite and model files. No pandas: a
notebook shows the report without building a frame.
"""

from __future__ import annotations

import html
import math
from typing import Any

MAX_ROWS = 40
ARROWS = {True: "↑", False: "↓"}


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4f}"


def _interval(row: dict[str, Any]) -> str:
    if row["ci_low"] is None:
        return "–"
    return f"[{_number(row['ci_low'])}, {_number(row['ci_high'])}]"


def _cells(row: dict[str, Any], with_dataset: bool) -> list[str]:
    return [row["dataset"]] * with_dataset + [
        row["perturbation"],
        row["metric"],
        ARROWS[bool(row["higher_is_better"])],
        _number(row["value"]),
        _interval(row),
        str(row["n"]),
    ]


def render_table(title: str, rows: list[dict[str, Any]]) -> str:
    """The HTML of `title` over `rows` (dicts of `tidy.report_rows`)."""
    with_dataset = len({row["dataset"] for row in rows}) > 1
    header = ["Dataset"] if with_dataset else []
    header += ["Perturbation", "Metric", "dir", "Value", "95% CI", "n"]
    lines = [
        '<div class="robench-report">',
        f"<p><strong>robench report</strong>: {html.escape(title)}</p>",
        "<table>",
        "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead>",
        "<tbody>",
    ]
    for row in rows[:MAX_ROWS]:
        cells = "".join(f"<td>{html.escape(str(c))}</td>" for c in _cells(row, with_dataset))
        lines.append(f"<tr>{cells}</tr>")
    lines += ["</tbody>", "</table>"]
    if len(rows) > MAX_ROWS:
        lines.append(
            f"<p>… and {len(rows) - MAX_ROWS} more rows; <code>report.to_pandas()</code> "
            "has every row.</p>"
        )
    lines.append("</div>")
    return "\n".join(lines)
