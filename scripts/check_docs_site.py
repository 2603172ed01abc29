"""Open the built documentation site in headless Chromium and check what a reader sees.

    .venv/bin/python scripts/check_docs_site.py [--site build/site] [--screenshots build/docs-check] [--chromium /usr/bin/chromium]

``make docs-check`` runs it after ``make docs``; ``tests/test_docs_site.py`` (``pytest -m docs``) too.
The site is served on 127.0.0.1 (a free port) and opened in the system's Chromium (Debian's
``chromium`` package: nothing is downloaded), driven by Playwright, headless, with a fresh profile
and Chromium's background networking, component updates and sync switched off.  On the home page,
a reward page, a notebook page and the CPU leaderboard it fails on:

- a console error or an uncaught exception of the page;
- a request to any other host (the site must work offline), a request that fails, or a response
  with an HTTP status of 400 or more;
- an image that did not load (not complete, or ``naturalWidth`` 0); on the notebook page, fewer
  than ``MIN_FIGURES`` figures of the notebook's own outputs;
- an internal link — every ``<a href>`` of those pages into the site, navigation included — whose
  page does not load or whose ``#anchor`` is not an ``id`` on that page.

It saves a screenshot of the top of each page (1280 × 1000 CSS pixels) and one of the notebook's
first figure to ``--screenshots``, prints one line per page, and exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import threading
import urllib.request
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "home": "docs/index.html",
    "reward_rlvr": "docs/rewards/rlvr.html",
    "notebook_grpo_core": "notebooks/02_grpo_core.html",
    "leaderboard_cpu": "benchmarks/results/leaderboard/LEADERBOARD.html",
}
"""Screenshot name -> page of the site that is checked."""
NOTEBOOK_PAGE = "notebook_grpo_core"
MIN_FIGURES = 3
"""The GRPO-core notebook draws at least this many figures (advantages, KL estimators, the run's curves)."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 1000}

LOAD_EVERY_IMAGE = """async () => {
  for (const img of document.images) img.loading = "eager";
  window.scrollTo(0, document.body.scrollHeight);
  await Promise.all([...document.images].map(img => img.complete ? null :
    new Promise(done => { img.addEventListener("load", done); img.addEventListener("error", done); })));
  window.scrollTo(0, 0);
  return [...document.images].map(img => ({src: img.currentSrc || img.src, width: img.naturalWidth,
                                          complete: img.complete, output: !!img.closest(".cell_output")}));
}"""


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # one line per page is printed instead
        pass


class _Ids(HTMLParser):
    """Every ``id`` (and legacy ``<a name>``) of an HTML page."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.ids.update(value for key, value in attrs if value and (key == "id" or (tag == "a" and key == "name")))


def serve(site: Path) -> ThreadingHTTPServer:
    """A quiet static server of ``site`` on 127.0.0.1, on a free port, in a daemon thread."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def broken_links(origin: str, hrefs: list[str], ids_of: dict[str, set[str] | None]) -> list[str]:
    """The internal links among ``hrefs`` whose page does not load or whose anchor is not on it."""
    broken = []
    for href in sorted(set(hrefs)):
        if urlsplit(href).netloc != urlsplit(origin).netloc or urlsplit(href).scheme not in ("http", "https"):
            continue  # another host (not fetched: no network) or mailto:, javascript:
        page, anchor = urldefrag(href)
        if page not in ids_of:
            try:
                with urllib.request.urlopen(page, timeout=10) as response:
                    parser = _Ids()
                    parser.feed(response.read().decode(errors="replace"))
                    ids_of[page] = parser.ids
            except OSError:
                ids_of[page] = None
        if ids_of[page] is None:
            broken.append(f"{href} (page does not load)")
        elif anchor and anchor not in ids_of[page]:
            broken.append(f"{href} (no id {anchor!r} on the page)")
    return broken


def check_page(context, origin: str, name: str, path: str, shots: Path, ids_of: dict) -> list[str]:
    """Open one page; return its problems (empty when it passes) and save its screenshots."""
    problems: list[str] = []
    page = context.new_page()
    page.on("console", lambda msg: msg.type == "error" and problems.append(f"console error: {msg.text}"))
    page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
    page.on(
        "requestfailed",
        lambda req: req.url.startswith(origin) and problems.append(f"request failed: {req.url} ({req.failure})"),
    )
    page.on("response", lambda resp: resp.status >= 400 and problems.append(f"HTTP {resp.status}: {resp.url}"))
    response = page.goto(urljoin(origin, path), wait_until="load")
    if response is None or not response.ok:
        return [f"{path} did not load ({response.status if response else 'no response'})"]
    images = page.evaluate(LOAD_EVERY_IMAGE)
    problems += [f"image not loaded: {img['src']}" for img in images if not img["complete"] or img["width"] == 0]
    figures = [img for img in images if img["output"] and img["width"] > 0]
    if name == NOTEBOOK_PAGE:
        if len(figures) < MIN_FIGURES:
            problems.append(f"{len(figures)} notebook figures loaded, expected at least {MIN_FIGURES}")
        else:
            page.locator(".cell_output img").first.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / f"{name}_figure.png"))
            page.evaluate("window.scrollTo(0, 0)")
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    problems += [f"broken link: {link}" for link in broken_links(origin, hrefs, ids_of)]
    page.screenshot(path=str(shots / f"{name}.png"))
    internal = sum(urlsplit(h).netloc == urlsplit(origin).netloc for h in hrefs)
    print(
        f"{'FAIL' if problems else 'ok  '} {path}: {len(images)} images ({len(figures)} notebook figures), "
        f"{internal} internal links checked",
        flush=True,
    )
    page.close()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=ROOT / "build" / "site", help="the built site (make docs)")
    parser.add_argument("--screenshots", type=Path, default=ROOT / "build" / "docs-check")
    parser.add_argument(
        "--chromium", default="/usr/bin/chromium", help="the system Chromium (Debian: apt-get install chromium)"
    )
    args = parser.parse_args(argv)
    missing = [p for p in PAGES.values() if not (args.site / p).is_file()]
    if missing:
        sys.exit(f"{args.site} lacks {', '.join(missing)}: build the site first (make docs)")
    if not Path(args.chromium).is_file():
        sys.exit(
            f"no Chromium at {args.chromium}: install Debian's (apt-get install -y chromium) or pass --chromium PATH"
        )
    from playwright.sync_api import sync_playwright

    args.screenshots.mkdir(parents=True, exist_ok=True)
    server = serve(args.site)
    origin = f"http://127.0.0.1:{server.server_address[1]}/"
    outside: list[str] = []
    failures: dict[str, list[str]] = {}
    ids_of: dict[str, set[str] | None] = {}
    try:
        with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="rewardzoo-chromium-") as profile:
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS, viewport=VIEWPORT
            )
            context.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith(origin)
                    else (outside.append(route.request.url), route.abort())[1]
                ),
            )
            for name, path in PAGES.items():
                failures[path] = check_page(context, origin, name, path, args.screenshots, ids_of)
            context.close()
    finally:
        server.shutdown()
    failures = {path: problems for path, problems in failures.items() if problems}
    for path, problems in failures.items():
        print(f"\n{path}:\n  " + "\n  ".join(problems))
    if outside:
        print("\nrequests to other hosts (refused):\n  " + "\n  ".join(sorted(set(outside))))
    ok = not failures and not outside
    print(
        f"\n{'PASS' if ok else 'FAIL'}: {len(PAGES)} pages, {len(ids_of)} distinct internal pages linked; "
        f"screenshots in {args.screenshots}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
