"""Render the report document as Markdown (``report.md``, figures linked from ``figures/``)."""

from __future__ import annotations

from sparsescope.report.document import (
    Bullets,
    Callout,
    Code,
    Document,
    FigureBlock,
    Heading,
    Paragraph,
    RawMarkdown,
    TableBlock,
)
from sparsescope.report.table_types import Table, is_numeric_text


def _cell(text: str) -> str:
    """A pipe-table cell: pipes escaped, newlines folded."""
    return text.replace("|", "\\|").replace("\n", " ")


def table_markdown(table: Table) -> str:
    """A GitHub pipe table; numbers right-aligned."""
    headers = table.headers()
    rows = table.cells()
    if not rows:
        return "*(no rows)*"
    numeric = [all(is_numeric_text(r[i]) for r in rows) for i in range(len(headers))]
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _block(block) -> str:
    if isinstance(block, Heading):
        return f"{'#' * block.level} {block.text}"
    if isinstance(block, Paragraph):
        return block.text
    if isinstance(block, Callout):
        return "> " + block.text
    if isinstance(block, Bullets):
        return "\n".join(f"- {item}" for item in block.items)
    if isinstance(block, Code):
        return f"```\n{block.text}\n```"
    if isinstance(block, RawMarkdown):
        return block.text.strip()
    if isinstance(block, TableBlock):
        t = block.table
        parts = [f"**Table {block.number}: {t.title}**"]
        if t.basis:
            parts.append(f"*{t.basis}*")
        parts += [table_markdown(t), f"**Reading:** {t.reading}"]
        return "\n\n".join(parts)
    if isinstance(block, FigureBlock):
        f = block.figure
        if f.png is None:
            return f"*Figure not drawn ({f.title}): {f.skipped_reason}.*"
        return f"![{f.title}]({f.path})\n\n*Figure {block.number}: {f.caption}*"
    raise TypeError(f"unknown block {type(block).__name__}")


def render_markdown(doc: Document) -> str:
    return f"# {doc.title}\n\n" + "\n\n".join(_block(b) for b in doc.blocks) + "\n"
