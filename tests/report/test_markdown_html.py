"""Markdown to HTML (markdown-it-py) for the report's inline text and extra sections."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

from sparsescope.report.html import inline, markdown_to_html

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4"
                       "DwABBAEAHnOcQAAAAABJRU5ErkJggg==")


class _Cells(HTMLParser):
    """Rows of (tag, text) cells of every table, and the tables' parents."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[tuple[str, str]]] = []
        self.parents: list[str] = []
        self._stack: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.parents.append(self._stack[-1] if self._stack else "")
        if tag == "tr":
            self.rows.append([])
        if tag in ("th", "td"):
            self._cell = []
        self._stack.append(f"{tag}.{dict(attrs).get('class', '')}")

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self._cell is not None:
            self.rows[-1].append((tag, "".join(self._cell).strip()))
            self._cell = None
        self._stack.pop()

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_headings_paragraphs_and_inline():
    out = markdown_to_html("## Stall *reasons*\n\nLong **Scoreboard** in `csrmv_v3_kernel`\n"
                           "spans two lines.\n\n#### Small")
    assert out.startswith("<h2>Stall <em>reasons</em></h2>\n")
    assert "<p>Long <strong>Scoreboard</strong> in <code>csrmv_v3_kernel</code>" in out
    assert out.endswith("spans two lines.</p>\n<h4>Small</h4>")
    assert markdown_to_html("# Top", heading_offset=2) == "<h3>Top</h3>"
    assert markdown_to_html("###### Deep", heading_offset=3) == "<h6>Deep</h6>"


def test_escaping_and_no_outside_links():
    assert inline("a < b & `x<y>`") == "a &lt; b &amp; <code>x&lt;y&gt;</code>"
    assert markdown_to_html("<script>x</script> & <b>") == \
        "<p>&lt;script&gt;x&lt;/script&gt; &amp; &lt;b&gt;</p>"
    assert inline("see [ncu docs](https://docs.nvidia.com) and ![plot](http://x/p.png)") == \
        "see ncu docs (https://docs.nvidia.com) and [image: plot]"
    out = markdown_to_html("[x](http://example.com) ![y](http://example.com/y.png)")
    assert "<a " not in out and "<img" not in out
    assert inline("csr_vector_tpr and 2 * 3 * 4") == "csr_vector_tpr and 2 * 3 * 4"


def test_pipe_table_cells_alignment_and_wrapper():
    out = markdown_to_html("| kernel | time (ms) |\n|:---|---:|\n| a \\| b | `x<y` |\n| c | 1.0 |")
    parser = _Cells()
    parser.feed(out)
    assert parser.rows == [[("th", "kernel"), ("th", "time (ms)")],
                           [("td", "a | b"), ("td", "x<y")],
                           [("td", "c"), ("td", "1.0")]]
    assert parser.parents == ["div.table-wrap"]
    assert '<td style="text-align:right"><code>x&lt;y</code></td>' in out
    assert '<th style="text-align:right">time (ms)</th>' in out


def test_code_block_keeps_text_verbatim():
    out = markdown_to_html("```sass\n/*0040*/ LDG.E R2, [R4.64] ;\n  # not a <heading>\n```\nafter")
    code = re.fullmatch(r'<pre><code class="language-sass">(.*)</code></pre>\n<p>after</p>',
                        out, re.S)
    assert code and code.group(1) == "/*0040*/ LDG.E R2, [R4.64] ;\n  # not a &lt;heading&gt;\n"


def test_lists_and_quotes():
    out = markdown_to_html("Intro:\n- one\n- **two**\n  continued\n\n1. first\n2. second\n\n> note")
    flat = out.replace("\n", "")
    assert flat == ("<p>Intro:</p><ul><li>one</li><li><strong>two</strong>continued</li></ul>"
                    "<ol><li>first</li><li>second</li></ol><blockquote><p>note</p></blockquote>")


def test_png_under_image_root_becomes_data_uri(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "stalls.png").write_bytes(PNG)
    text = "Before.\n\n![Warp *stalls*](figures/stalls.png)\n\nInline ![s](figures/stalls.png) ok."
    out = markdown_to_html(text, image_root=tmp_path)
    uri = "data:image/png;base64," + base64.b64encode(PNG).decode("ascii")
    assert (f'<figure><img alt="Warp stalls" src="{uri}"><figcaption>Warp <em>stalls</em>'
            "</figcaption></figure>") in out
    assert f'<p>Inline <img alt="s" src="{uri}"> ok.</p>' in out
    assert "figures/stalls.png" not in out
    # Without the folder, or for a missing file, the image is its alt text (nothing fetched).
    assert "[image: Warp stalls]" in markdown_to_html(text)
    missing = markdown_to_html("![gone](figures/gone.png)", image_root=tmp_path)
    assert missing == "<p>[image: gone]</p>"
