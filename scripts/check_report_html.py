"""Open a report.html in a real headless Chromium at 1400 px and check what a reader sees.

    python scripts/check_report_html.py OUT/report.html [--screenshot docs/report.png]

Checks: no table wider than the page (every column visible without scrolling), no broken
image (each <img> decoded, non-zero size), no "NaN" in the text, and no internal identifier
left for the reader to decode: a snake_case word (``mlp_gain``, ``copy_bw_gb_s``) in the text
outside ``<code>`` / ``<pre>`` (where kernel names, files and options are shown as written) --
the same rule as ``sparsescope.report.labels.leftover_identifiers`` for the Markdown. The page
is loaded with a small script appended that measures the layout and writes the verdict into
the DOM, which ``chromium --headless --dump-dom`` prints after the page's scripts ran: no
driver, no network. Exit 0 when every check passes, 1 with the failures listed, 2 without a
Chromium.

In CI ``.ci/run`` installs Chromium from the machine's Debian packages when it can, and
``tests/report/test_html_browser.py`` runs this check on a CPU report and on a committed GPU
report re-rendered (skipped where no Chromium is installed).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH, HEIGHT = 1400, 900
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
PROBE = """
<script>
window.addEventListener('load', () => {
  const page = document.documentElement.clientWidth;
  const clipped = [];
  document.querySelectorAll('table').forEach((t, i) => {
    const r = t.getBoundingClientRect();
    const box = t.parentElement.getBoundingClientRect();
    if (r.right > page + 0.5 || t.scrollWidth > t.parentElement.clientWidth + 0.5) {
      const cap = t.closest('div, section')?.previousElementSibling?.textContent || '';
      clipped.push({table: i, width: Math.round(r.width), room: Math.round(box.width),
                    caption: cap.slice(0, 80)});
    }
  });
  const broken = [...document.images].filter(im => !im.complete || im.naturalWidth === 0)
                   .map(im => (im.alt || im.src.slice(0, 40)));
  const nan = (document.body.innerText.match(/\\bNaN\\b/g) || []).length;
  // snake_case words in the text outside code: identifiers nobody should have to decode
  const snake = /(?<![\\w\\/.:\\-`])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\\w\\/:\\-`])/g;
  const identifiers = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode: n => n.parentElement.closest('code, pre, script, style')
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    for (const m of n.textContent.matchAll(snake)) identifiers.push(m[0]);
  }
  const out = document.createElement('pre');
  out.id = 'sparsescope-check';
  out.textContent = JSON.stringify({page, tables: document.querySelectorAll('table').length,
                                    images: document.images.length, clipped, broken, nan,
                                    identifiers: [...new Set(identifiers)]});
  document.body.appendChild(out);
});
</script>
"""


def find_browser() -> str | None:
    return next((p for b in BROWSERS if (p := shutil.which(b))), None)


def _chromium(browser: str, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--window-size={WIDTH},{HEIGHT}", "--virtual-time-budget=5000"]
    return subprocess.run([browser, *flags, *args], capture_output=True, text=True,
                          timeout=120, check=False)


def check(html: Path, browser: str) -> dict:
    """The probe's verdict for ``html`` (a copy with the probe appended is what loads)."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(html.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                         encoding="utf-8")
        dom = _chromium(browser, "--dump-dom", probe.as_uri()).stdout
    found = re.search(r'<pre id="sparsescope-check">(.*?)</pre>', dom, re.S)
    if found is None:
        raise RuntimeError("the page's check did not run (no verdict in the DOM)")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def screenshot(html: Path, browser: str, png: Path, height: int = 2400) -> None:
    png.parent.mkdir(parents=True, exist_ok=True)
    flags = [f"--window-size={WIDTH},{height}", f"--screenshot={png.resolve()}", html.as_uri()]
    _chromium(browser, *flags)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", type=Path)
    parser.add_argument("--screenshot", type=Path, help="also save a 1400 px wide PNG here")
    args = parser.parse_args(argv)
    browser = find_browser()
    if browser is None:
        print("no Chromium found (apt-get install chromium)", file=sys.stderr)
        return 2
    verdict = check(args.html.resolve(), browser)
    if args.screenshot:
        screenshot(args.html.resolve(), browser, args.screenshot)
    failures = ([f"table {c['table']} is {c['width']} px wide in {c['room']} px "
                 f"({c['caption']!r})" for c in verdict["clipped"]]
                + [f"broken image: {b}" for b in verdict["broken"]]
                + ([f"{verdict['nan']} NaN in the text"] if verdict["nan"] else [])
                + [f"internal identifier left in the text: {name}"
                   for name in verdict.get("identifiers", [])])
    print(f"{args.html}: {verdict['tables']} tables, {verdict['images']} images at {WIDTH} px: "
          + ("ok" if not failures else f"{len(failures)} problem(s)"))
    for line in failures:
        print(f"  {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
