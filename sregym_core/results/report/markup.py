"""HTML building blocks shared by the report's pages.

Everything that comes from a record passes through :func:`e` (agents' outputs are adversarial:
a tool output may well contain ``<script>``). The pages also carry a Content-Security-Policy that
forbids every script, so even a missed escape could not run code.

.. versionadded:: 0.2
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

#: No script, no network: only the stylesheet next to the page and inline SVG/data images.
CSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str, *, css_href: str, lang: str = "en") -> str:
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{lang}"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="referrer" content="no-referrer"><title>{e(title)}</title>'
        f'<link rel="stylesheet" href="{e(css_href)}"></head>\n<body>{body}</body></html>\n'
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, caption: str | None = None, cls: str = "",
          numeric: Sequence[int] = (), row_classes: Sequence[str] | None = None, row_header: bool = True) -> str:
    """A table whose cells are HTML already (callers escape); ``numeric`` columns align right.

    The first column is a row header (``<th scope="row">``) so screen readers announce it.
    """
    numeric_columns = set(numeric)
    head = "".join(f'<th scope="col"{" class=num" if i in numeric_columns else ""}>{h}</th>' for i, h in enumerate(headers))
    body = []
    for index, row in enumerate(rows):
        cells = []
        for i, cell in enumerate(row):
            tag = "th" if i == 0 and row_header else "td"
            attrs = ' scope="row"' if tag == "th" else ""
            attrs += ' class="num"' if i in numeric_columns else ""
            cells.append(f"<{tag}{attrs}>{cell}</{tag}>")
        css = f' class="{row_classes[index]}"' if row_classes and row_classes[index] else ""
        body.append(f"<tr{css}>{''.join(cells)}</tr>")
    cap = f"<caption>{caption}</caption>" if caption else ""
    return (f'<div class="table-wrap" role="region" aria-label="{e(_strip(caption or "table"))}" tabindex="0">'
            f'<table class="{cls}">{cap}<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def _strip(text: str) -> str:
    import re

    return re.sub(r"<[^>]+>", "", text)


def figure(chart: str, caption: str, data_table: str | None = None) -> str:
    """A chart with its caption, and its data as a table (the accessible alternative) under it."""
    details = (f'<details class="data"><summary>Data as a table</summary>{data_table}</details>' if data_table else "")
    return f'<figure class="chart-box"><figcaption>{caption}</figcaption><div class="chart-scroll">{chart}</div>{details}</figure>'


def badge(passed: bool | None, *, yes: str = "pass", no: str = "fail", none: str = "-") -> str:
    if passed is None:
        return f'<span class="badge none">{e(none)}</span>'
    return f'<span class="badge {"ok" if passed else "bad"}">{e(yes if passed else no)}</span>'


def pre(text: str, *, cls: str = "") -> str:
    return f'<pre class="{cls}">{e(text)}</pre>'


def as_text(value: Any) -> str:
    """A value from a record as readable text (JSON for structures; the text of content parts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in value):
        return "\n".join(p["text"] for p in value)  # [{"type": "text", "text": ...}, ...]: multi-part content
    compact = json.dumps(value, ensure_ascii=False, default=str)
    return compact if len(compact) <= 100 else json.dumps(value, indent=1, ensure_ascii=False, default=str)


def collapsible(text: str, summary: str, *, open_below_lines: int = 16, cls: str = "") -> str:
    """Text in a ``<details>`` block, open when short."""
    lines = text.count("\n") + 1
    is_open = " open" if lines <= open_below_lines and len(text) <= 2000 else ""
    return (f'<details class="output {cls}"{is_open}><summary>{e(summary)} '
            f'<span class="muted">({lines} line{"s" if lines != 1 else ""}, {len(text):,} chars)</span></summary>{pre(text)}</details>')
