"""A report's blocks as Markdown and as one self-contained HTML page (its charts inlined)."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from reports.blocks import Block


def to_markdown(items: list[Block]) -> str:
    lines: list[str] = []
    for b in items:
        if b.kind == "heading":
            lines += ["#" * b.level + " " + b.text, ""]
        elif b.kind == "paragraph":
            lines += [b.text, ""]
        elif b.kind == "bullets":
            lines += [f"- {item}" for item in b.items] + [""]
        elif b.kind == "code":
            lines += ["```", b.text, "```", ""]
        elif b.kind == "image":
            lines += [f"![{b.text}]({b.items[0]})", ""]
        elif b.kind == "table":
            header, *body = b.rows
            lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(row) + " |" for row in body] + [""]
    return "\n".join(lines)


def _inline(text: str) -> str:
    """The two inline forms the blocks use: **bold** and `code`."""
    escaped = html.escape(text)
    for marker, tag in (("**", "strong"), ("`", "code")):
        parts = escaped.split(marker)
        escaped = "".join(p if i % 2 == 0 else f"<{tag}>{p}</{tag}>" for i, p in enumerate(parts))
    return escaped


def to_html(items: list[Block], out_dir: Path) -> str:
    body: list[str] = []
    for b in items:
        if b.kind == "heading":
            body.append(f"<h{b.level}>{_inline(b.text)}</h{b.level}>")
        elif b.kind == "paragraph":
            body.append(f"<p>{_inline(b.text)}</p>")
        elif b.kind == "bullets":
            body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>")
        elif b.kind == "code":
            body.append(f"<pre>{html.escape(b.text)}</pre>")
        elif b.kind == "image":
            data = base64.b64encode((out_dir / b.items[0]).read_bytes()).decode()
            caption = html.escape(b.text)
            image = f'<img alt="{caption}" src="data:image/png;base64,{data}">'
            body.append(f"<figure>{image}<figcaption>{caption}</figcaption></figure>")
        elif b.kind == "table":
            header, *rows = b.rows
            head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
            cells = "".join(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>")
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;font-size:90%}"
        "td,th{border:1px solid #bbb;padding:4px 8px;text-align:right}"
        "td:first-child,th{text-align:left}pre{background:#f4f4f4;padding:8px;overflow-x:auto}img{max-width:100%}"
    )
    title = html.escape(items[0].text) if items else "spotbatch report"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{style}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
