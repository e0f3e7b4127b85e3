"""The small Markdown-to-HTML converter used for extra sections."""

from __future__ import annotations

from sparsescope.report.minimd import inline, markdown_to_html


def test_headings_paragraphs_and_inline():
    out = markdown_to_html("## Stall *reasons*\n\nLong **Scoreboard** in `csrmv_v3_kernel`\n"
                           "spans two lines.\n\n#### Small")
    assert out == ("<h2>Stall <em>reasons</em></h2>\n"
                   "<p>Long <strong>Scoreboard</strong> in <code>csrmv_v3_kernel</code> "
                   "spans two lines.</p>\n<h4>Small</h4>")


def test_escaping_and_no_outside_links():
    assert inline("a < b & `x<y>`") == "a &lt; b &amp; <code>x&lt;y&gt;</code>"
    assert inline("see [ncu docs](https://docs.nvidia.com) and ![plot](http://x/p.png)") == \
        "see ncu docs (https://docs.nvidia.com) and [image: plot]"
    assert "<a " not in markdown_to_html("[x](http://example.com)")
    assert inline("csr_vector_tpr and 2 * 3 * 4") == "csr_vector_tpr and 2 * 3 * 4"


def test_pipe_table_with_alignment_and_escaped_pipe():
    out = markdown_to_html("| kernel | time (ms) |\n|:---|---:|\n| a \\| b | 0.5 |\n| c | 1.0 |")
    assert out.splitlines() == [
        "<table>",
        '<thead><tr><th>kernel</th><th style="text-align:right">time (ms)</th></tr></thead>',
        "<tbody>",
        '<tr><td>a | b</td><td style="text-align:right">0.5</td></tr>',
        '<tr><td>c</td><td style="text-align:right">1.0</td></tr>',
        "</tbody></table>"]


def test_code_block_keeps_text_verbatim():
    out = markdown_to_html("```sass\n/*0040*/ LDG.E R2, [R4.64] ;\n  # not a heading\n```\nafter")
    assert out == ("<pre><code>/*0040*/ LDG.E R2, [R4.64] ;\n  # not a heading</code></pre>\n"
                   "<p>after</p>")


def test_lists_and_quotes():
    out = markdown_to_html("Intro:\n- one\n- two\n  continued\n\n1. first\n2) second\n\n> note")
    assert out.splitlines() == [
        "<p>Intro:</p>", "<ul><li>one</li><li>two continued</li></ul>",
        "<ol><li>first</li><li>second</li></ol>", "<blockquote><p>note</p></blockquote>"]


def test_heading_offset_moves_headings_down():
    assert markdown_to_html("# Top", heading_offset=2) == "<h3>Top</h3>"
