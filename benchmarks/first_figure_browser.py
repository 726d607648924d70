"""From the click to the first figure, in JupyterLab in headless Chromium: notebook 00's first timeline in a
fresh kernel, run as a learner runs it.

    python benchmarks/first_figure_browser.py [--repeat 5] [--read SECONDS]

Each repeat opens notebook 00 (a copy in a temp folder) in a private JupyterLab set up as ``make lab`` sets it
up (the kernel extension that starts the warm process, the save hook), which starts a new kernel; then, cell
by cell with Shift+Enter: the imports cell, ``bl.show(...)``, and the first timeline cell
(``bl.run(staggered_arrival.scenario, 4)`` and ``run.timeline(...)``, whose slowest rank works 0.5 s).
The time is taken in the page: from the Shift+Enter keydown on the timeline cell to the new figure's image
having loaded and been painted. ``--read 20`` waits 20 s before each of those cells, as a learner reading
the text; the default 0 runs each cell as soon as the one before has finished (the worst case).

Also printed: the imports cell (Shift+Enter to the kernel idle) and the load average. Target: <= 2 s on a
quiet machine. The browser tests' server and Chromium settings are used (tests/browser/test_lab_in_browser.py).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from test_lab_in_browser import (  # noqa: E402  (the browser tests' lab and helpers)
    CHROMIUM_ARGS,
    NOTEBOOK_STATE_JS,
    find_chromium,
    running_lab,
    still_running,
    wait_for,
)

NOTEBOOK = "notebooks/00_what_is_a_barrier.ipynb"
IMPORTS, SHOW, TIMELINE = 2, 4, 5  # cell indices in notebook 00

#: Select cell ``index`` in command mode (what clicking a cell's left margin does); its stored execution count
#: is blanked, so that the count the new kernel gives it (1 for the first cell, as stored) shows it has run.
SELECT_JS = """(index) => {
  const panel = window.jupyterapp.shell.currentWidget;
  panel.content.widgets[index].model.executionCount = null;
  panel.content.activeCellIndex = index;
  panel.content.mode = 'command';
  panel.content.activate();
  return panel.content.activeCellIndex;
}"""

#: Watch the cell at ``index``: t0 at the next Shift+Enter keydown (capture phase, before the lab sees it), t1
#: when a figure image that was not there before has loaded and the next frame has been painted.
WATCH_JS = """(index) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cell = panel.content.widgets[index].node;
  const before = new Set(cell.querySelectorAll('.jp-OutputArea-output img'));
  const clock = window.__firstFigure = {t0: null, t1: null};
  window.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && e.shiftKey && clock.t0 === null) clock.t0 = performance.now();
  }, {capture: true});
  const painted = () => requestAnimationFrame(() => requestAnimationFrame(() => {
    if (clock.t1 === null) clock.t1 = performance.now();
  }));
  const observer = new MutationObserver(() => {
    const img = Array.from(cell.querySelectorAll('.jp-OutputArea-output img')).find(i => !before.has(i));
    if (!img || clock.t0 === null) return;
    observer.disconnect();
    if (img.complete && img.naturalWidth > 0) painted();
    else img.addEventListener('load', painted, {once: true});
  });
  observer.observe(cell, {childList: true, subtree: true});
}"""


#: ``--profile``: stamps (wall clock) in the kernel, where the timed cell spends its time. Executed silently
#: (no execution count, no output) just before the click; it wraps bl.run, the wait for the warm process and
#: Run.timeline, and times the cell from IPython's pre_run_cell to post_run_cell (which comes after the PNG).
PROFILE = """
import time as _bl_t, IPython as _bl_ipython, barrierlab as _bl_package
from barrierlab import launch as _bl_launch, result as _bl_result
_bl_profile = {}
def _bl_stamp(name):
    _bl_profile.setdefault(name, _bl_t.time())
def _bl_timed(name, fn):
    def timed(*args, **kwargs):
        _bl_stamp(name + ">")
        try:
            return fn(*args, **kwargs)
        finally:
            _bl_stamp(name + "<")
    return timed
_bl_ipython.get_ipython().events.register("pre_run_cell", lambda info: _bl_stamp("cell>"))
_bl_ipython.get_ipython().events.register("post_run_cell", lambda result: _bl_stamp("cell<"))
_bl_package.run = _bl_timed("run", _bl_package.run)
_bl_launch._warm.wait_ready = _bl_timed("warm", _bl_launch._warm.wait_ready)
_bl_result.Run.timeline = _bl_timed("timeline", _bl_result.Run.timeline)
"""

#: Execute ``code`` silently in the notebook's kernel; the text of ``expression`` evaluated after it.
KERNEL_JS = """async ([code, expression]) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const reply = await kernel.requestExecute(
    {code, silent: true, store_history: false, user_expressions: {value: expression}}).done;
  return reply.content.user_expressions.value.data['text/plain'];
}"""

PHASES = (
    ("click -> the cell starts in the kernel", "t0", "cell>"),
    ("  cell start -> bl.run called", "cell>", "run>"),
    ("  waiting for the warm process", "warm>", "warm<"),
    ("  rest of bl.run (ranks, collect)", "warm<", "run<"),
    ("  run.timeline()", "timeline>", "timeline<"),
    ("  PNG and the end of the cell", "timeline<", "cell<"),
    ("cell end -> figure painted", "cell<", "t1"),
)


def run_cell(page, index: int) -> float:
    """Shift+Enter on cell ``index``; seconds until it has a new execution count and the kernel is idle."""
    page.evaluate(SELECT_JS, index)
    started = time.monotonic()
    page.keyboard.press("Shift+Enter")
    wait_for(
        lambda: (
            (s := page.evaluate(NOTEBOOK_STATE_JS, NOTEBOOK))["status"] == "idle"
            and s["cells"][index]["count"] is not None
        ),
        120,
        f"cell {index} to run",
        interval=0.05,
    )
    return time.monotonic() - started


def one_fresh_kernel(browser, lab, read: float, phases: list | None = None) -> tuple[float, float]:
    """Open 00 (a new kernel), run its first cells one by one; (imports cell, click to first figure) seconds."""
    page = browser.new_page()
    page.set_default_timeout(60_000)
    page.goto(lab.notebook_url(NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
    wait_for(
        lambda: (s := page.evaluate(NOTEBOOK_STATE_JS, NOTEBOOK)) and s["ready"] and s["status"] == "idle",
        120,
        "notebook 00 open with an idle kernel",
    )
    kernel = page.evaluate(NOTEBOOK_STATE_JS, NOTEBOOK)["kernel"]
    try:
        time.sleep(read)
        imports = run_cell(page, IMPORTS)
        time.sleep(read)
        run_cell(page, SHOW)
        time.sleep(read)
        if phases is not None:
            page.evaluate(KERNEL_JS, [PROFILE, "1"])
        page.evaluate(SELECT_JS, TIMELINE)
        page.evaluate(WATCH_JS, TIMELINE)
        page.keyboard.press("Shift+Enter")
        clock = wait_for(
            lambda: (c := page.evaluate("() => window.__firstFigure")) and c["t1"] is not None and c,
            120,
            "the first timeline to appear",
            interval=0.05,
        )
        wait_for(lambda: page.evaluate(NOTEBOOK_STATE_JS, NOTEBOOK)["status"] == "idle", 60, "the kernel idle")
        if phases is not None:
            stamps = json.loads(ast.literal_eval(page.evaluate(KERNEL_JS, ["import json", "json.dumps(_bl_profile)"])))
            origin = page.evaluate("() => performance.timeOrigin")
            stamps |= {name: (origin + clock[name]) / 1000 for name in ("t0", "t1")}
            phases.append({label: stamps[end] - stamps[start] for label, start, end in PHASES})
        return imports, (clock["t1"] - clock["t0"]) / 1000
    finally:
        page.close()
        family = lab.family(kernel)
        lab.api("DELETE", f"/api/kernels/{kernel}")
        left = still_running(family, 30)
        if left:
            raise SystemExit(f"the kernel's processes outlived it: {[p.pid for p in left]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh kernels (default 5)")
    parser.add_argument("--read", type=float, default=0.0, help="seconds before each cell, reading (default 0)")
    parser.add_argument("--profile", action="store_true", help="also time the phases in the kernel (see PROFILE)")
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        raise SystemExit("no Chromium found: run scripts/setup_browser.sh")
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="first-figure-"))
    try:
        (home / "root" / "notebooks").mkdir(parents=True)
        shutil.copy2(ROOT / NOTEBOOK, home / "root" / NOTEBOOK)
        loads, imports, figures, phases = [], [], [], [] if args.profile else None
        with running_lab(home, home / "root") as lab, sync_playwright() as api:
            browser = api.chromium.launch_persistent_context(
                str(home / "chromium-profile"),
                executable_path=chromium,
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1400, "height": 1000},
            )
            try:
                for _ in range(args.repeat):
                    loads.append(os.getloadavg()[0])
                    seconds_imports, seconds_figure = one_fresh_kernel(browser, lab, args.read, phases)
                    imports.append(seconds_imports)
                    figures.append(seconds_figure)
                    print(f"imports {seconds_imports:.2f} s, click to figure {seconds_figure:.2f} s", file=sys.stderr)
            finally:
                browser.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(
        f"notebook 00, fresh kernel per repeat, {args.read:g} s before each cell; "
        f"1-min load average {min(loads):.1f}–{max(loads):.1f} on {os.cpu_count()} CPUs"
    )
    print("| what | median (s) | range (s) | all (s) |")
    print("|---|---:|---|---|")
    rows = [("imports cell", imports), ("click to first timeline", figures)]
    rows += [(label, [p[label] for p in phases]) for label, _, _ in PHASES] if phases else []
    for name, values in rows:
        print(
            f"| {name} | {statistics.median(values):.2f} | {min(values):.2f}–{max(values):.2f} | "
            + ", ".join(f"{v:.2f}" for v in values)
            + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
