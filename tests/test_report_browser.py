"""The HTML report of recorded results, rendered in headless Chromium and checked as a reader sees it.

The results under tests/data/report-results are real records (see its README): several agents and
problems in two results directories, failures, a timeout, and an attempt whose outputs carry
script payloads. ``sregym report`` (the installed command) writes the report; Chromium (Debian's
package, driven over the DevTools protocol) opens it from disk and the checks run in the page:
no horizontal scrolling at 1280 px, no chart label cut or overlapping another, every attempt page
reachable from the summary, nothing from the records executed or turned into markup.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cdp_browser import Browser, find_chromium

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "report-results"
SREGYM = str(Path(sys.executable).parent / "sregym")
ROOT = Path(__file__).parents[1]
#: the README's pictures; SREGYM_UPDATE_SCREENSHOT=1 refreshes them from this test's report
DOCS_OVERVIEW, DOCS_ATTEMPT = ROOT / "docs" / "report-overview.png", ROOT / "docs" / "report-attempt.png"
#: screenshots kept after the run (a CI artifact): $SREGYM_TEST_ARTIFACTS, by default test-artifacts/ (git-ignored)
ARTIFACTS = Path(os.environ.get("SREGYM_TEST_ARTIFACTS") or ROOT / "test-artifacts")


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first chunk, right after the signature)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")

# Every chart label must lie inside its chart and overlap no other label.
LABEL_CHECK = """(() => {
  const problems = []; let labels = 0, charts = 0;
  const shown = t => [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('');
  for (const svg of document.querySelectorAll('svg')) {
    charts++;
    const box = svg.getBoundingClientRect();
    if (svg.getAttribute('role') !== 'img') problems.push(`${svg.id}: no role=img`);
    const name = (svg.getAttribute('aria-labelledby') || '').split(' ')[0];
    if (!name || !document.getElementById(name) || !document.getElementById(name).textContent.trim())
      problems.push(`${svg.id}: no accessible name`);
    const texts = [...svg.querySelectorAll('text')].map(t => ({t, r: t.getBoundingClientRect(), s: shown(t)}));
    for (const {t, r, s} of texts) {
      labels++;
      if (r.width < 1 || r.height < 1) problems.push(`${svg.id}: "${s}" has no size`);
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
        problems.push(`${svg.id}: "${s}" sticks out of the chart (${r.left},${r.top},${r.right},${r.bottom} vs ${box.left},${box.top},${box.right},${box.bottom})`);
      if (s.endsWith('\\u2026') && !t.querySelector('title')) problems.push(`${svg.id}: "${s}" cut without a tooltip`);
    }
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i].r, b = texts[j].r;
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 0.5 && h > 0.5) problems.push(`${svg.id}: "${texts[i].s}" overlaps "${texts[j].s}"`);
    }
  }
  return {charts, labels, problems};
})()"""

OVERFLOW = "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"

# Anything a record could have turned into live markup, and the marker its payloads would set.
INJECTION = """(() => ({
  pwned: document.body.dataset.pwned || null,
  elements: [...document.querySelectorAll('script, iframe, img, object, embed, svg [onload]')].map(e => e.outerHTML.slice(0, 80)),
  handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
  jsLinks: document.querySelectorAll('a[href^="javascript:" i]').length,
  cssLoaded: getComputedStyle(document.body).maxWidth,
}))()"""


@pytest.fixture(scope="module")
def chromium():
    path = find_chromium()
    if not path:
        pytest.skip("chromium is not installed (tools/setup.sh installs Debian's chromium when run as root)")
    browser = Browser(path)
    try:
        yield browser
    finally:
        browser.close()
        assert browser.proc.poll() is not None, "chromium still running"
        assert browser.live_processes() == []  # no helper process of its group survived either


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of both recorded results directories, written by the installed ``sregym report``."""
    root = tmp_path_factory.mktemp("report")
    dirs = []
    for name in ("geo-image", "mixed"):
        shutil.copytree(DATA / name, root / name)
        dirs.append(str(root / name))
    out = root / "out" / "report.html"
    proc = subprocess.run([SREGYM, "report", *dirs, "--out", str(out)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SREGYM_HOME": str(root / "home")})
    assert proc.returncode == 0, proc.stderr
    assert "HTML report:" in proc.stdout and "hotel-db-revoke-geo" in proc.stdout
    records = [json.loads(line) for name in ("geo-image", "mixed")
               for line in (DATA / name / "results.jsonl").read_text().splitlines()]
    return out, records


def _check_page(browser: Browser, where: str) -> dict:
    width, client = browser.evaluate(OVERFLOW)
    assert width <= client, f"{where}: horizontal scroll ({width} > {client} px)"
    labels = browser.evaluate(LABEL_CHECK)
    assert not labels["problems"], f"{where}: " + "\n".join(labels["problems"])
    injected = browser.evaluate(INJECTION)
    assert injected["cssLoaded"] == "1200px", f"{where}: stylesheet not applied"
    assert injected == {"pwned": None, "elements": [], "handlers": 0, "jsLinks": 0, "cssLoaded": "1200px"}, where
    return labels


def test_report_in_chromium(chromium, report):
    out, records = report
    index = out.resolve().as_uri()
    chromium.call("Network.enable")
    chromium.navigate(index)
    loaded = [e["params"]["request"]["url"] for e in chromium.events if e.get("method") == "Network.requestWillBeSent"]
    chromium.call("Network.disable")
    assert index in loaded and any(u.endswith("report.css") for u in loaded), loaded
    assert all(url.startswith("file://") for url in loaded), loaded  # nothing from the network
    assert chromium.evaluate("document.querySelector('h1').textContent").startswith("SREGym results")
    labels = _check_page(chromium, "report.html")
    assert labels["charts"] >= 6 and labels["labels"] > 50  # overview, TTD, TTM, leaderboard, problems, layers...
    # the long problem names of the old bug are whole, and time axes carry units
    texts = chromium.evaluate("[...document.querySelectorAll('svg text')].map(t => t.textContent)")
    assert "hotel-wrong-image-geo" in texts and "hotel-scale-zero-rate" in texts
    ttd_ticks = chromium.evaluate("[...document.querySelectorAll('#chart-ttd text')].map(t => t.textContent)")
    ticks = [t for t in ttd_ticks if re.fullmatch(r"[\d.]+ (ms|s|min)", t)]
    assert len(ticks) >= 3 and len(set(ticks)) == len(ticks), ttd_ticks  # sub-second times are not rounded away

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = chromium.screenshot(ARTIFACTS / "report.png")
    width, height = _png_size(shot)
    assert width == 1280 and height >= 900, (width, height)  # the whole page, not an empty capture
    print(f"\nreport screenshot: {shot}")
    update_docs = bool(os.environ.get("SREGYM_UPDATE_SCREENSHOT"))
    if update_docs:
        chromium.screenshot(DOCS_OVERVIEW, full_page=False)

    for narrow in (1024, 800):  # narrower windows do not scroll sideways either
        chromium.call("Emulation.setDeviceMetricsOverride", width=narrow, height=900, deviceScaleFactor=1, mobile=False)
        chromium.navigate(index)
        width, client = chromium.evaluate(OVERFLOW)
        assert width <= client, f"horizontal scroll at {narrow} px"
        problems = chromium.evaluate(LABEL_CHECK)["problems"]  # charts shrink with the page, labels with them
        assert not problems, f"at {narrow} px: " + "\n".join(problems)
    chromium.call("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False)

    # every attempt is linked from the summary, and each link opens that attempt's page
    chromium.navigate(index)
    hrefs = chromium.evaluate("[...document.querySelectorAll('#attempts a[href]')].map(a => a.getAttribute('href'))")
    per_problem = chromium.evaluate("[...document.querySelectorAll('#problems a[href]')].map(a => a.getAttribute('href'))")
    assert len(hrefs) == len(set(hrefs)) == len(records) == 9
    assert sorted(per_problem) == sorted(hrefs)  # the per-problem table links every attempt too
    expected = {f"{r['problem_id']} \u00b7 {r['agent']}{' (' + r['model'] + ')' if r['model'] else ''} \u00b7 attempt {r['attempt']}"
                for r in records}
    seen = set()
    for href in hrefs:
        chromium.navigate(index)
        chromium.click_and_wait(f"document.querySelector('#attempts a[href=\"{href}\"]')")
        assert chromium.evaluate("location.href").endswith(href.split("/")[-1])
        heading = chromium.evaluate("document.querySelector('h1').textContent")
        assert heading in expected, heading
        seen.add(heading)
        if update_docs and heading == "hotel-wrong-image-geo \u00b7 reference \u00b7 attempt 1":
            chromium.screenshot(DOCS_ATTEMPT, full_page=False)  # the top of the page, as a reader lands on it
        labels = _check_page(chromium, heading)
        assert labels["charts"] >= 1  # the timeline
        counts = chromium.evaluate("[document.querySelectorAll('table.answers tbody tr').length, "
                                   "document.querySelectorAll('ul.tree.root details').length, "
                                   "document.querySelectorAll('article.step').length]")
        assert counts[0] == 9 and counts[1] >= 1, (heading, counts)  # the nine answers, the oracle tree
        if counts[2]:  # steps on the timeline are links a keyboard reaches and follows
            assert chromium.evaluate("(() => { const a = document.querySelector('#chart-timeline a'); a.focus();"
                                     " return document.activeElement === a; })()")
            for kind in ("keyDown", "keyUp"):
                chromium.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13,
                              **({"text": "\r"} if kind == "keyDown" else {}))
            assert chromium.evaluate("location.hash").startswith("#step-")
        if "hostile" in heading:
            assert _png_size(chromium.screenshot(ARTIFACTS / "hostile-attempt.png"))[0] == 1280
            text = chromium.evaluate("document.body.innerText")
            for payload in ("<script>document.body.dataset.pwned='output'</script>",
                            "<img src=x onerror=\"document.body.dataset.pwned='img'\">",
                            "<script>document.body.dataset.pwned='model'</script>"):
                assert payload in text  # shown as text, not run
        if "attempt 2" in heading:
            assert "time limit: agent" in chromium.evaluate("document.querySelector('.why-box').textContent")
        # back to the report from the breadcrumb
        chromium.click_and_wait("document.querySelector('nav[aria-label=breadcrumb] a')")
        assert chromium.evaluate("location.href") == index
    assert seen == expected
    print(f"attempt screenshot: {ARTIFACTS / 'hostile-attempt.png'}")


def test_browser_is_gone_after_close():
    """The driver kills chromium and its helpers by process group, even when a test fails mid-way."""
    path = find_chromium()
    if not path:
        pytest.skip("chromium is not installed")
    browser = Browser(path)
    browser.navigate("about:blank")
    assert len(browser.live_processes()) > 1  # the browser and its helpers (renderer, GPU, ...)
    browser.close()
    assert browser.proc.poll() is not None
    assert browser.live_processes() == []
