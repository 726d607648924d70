"""A notebook presented as slides in JupyterLab (jupyterlab-slideshow), on a 1280x720 screen, in headless Chromium.

The notebook is a copy of ``notebooks/05_stragglers_and_overhead.ipynb`` given its slide metadata by
``scripts/slides.py`` (the stored notebook is not changed).  The test presents it as an instructor would:
run the set-up cell (skipped on the slides), start the slideshow, advance with the keyboard, run the cell
on the first slide that starts ranks, and check that its timeline is on screen, whole and not covered;
then the straggler explorer on its slide: its controls and figure fit the screen and a new slow rank
redraws it (the redraw time is recorded).  Screenshots go to artifacts/browser/slideshow-*.png.

Server, browser, temp dirs and the leftover-process checks are those of test_lab_in_browser.py.
Without jupyterlab-slideshow in this environment the test skips (fails under CI): see requirements.txt.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_lab_in_browser import (  # noqa: E402  (shared fixtures and helpers of the browser tests)
    ARTIFACTS,
    NOTEBOOK_STATE_JS,
    REDRAW_TIMEOUT,
    ROOT,
    browser,
    browser_home,
    chromium_path,
    kernel_gone_after_shutdown,
    lab,
    notebook_root,
    open_notebook,
    playwright_api,
    unavailable,
    wait_for,
)

sys.path.insert(0, str(ROOT / "scripts"))
import slides  # noqa: E402

SOURCE = ROOT / "notebooks" / "05_stragglers_and_overhead.ipynb"
PATH = "slides/05_stragglers_and_overhead.ipynb"
SCREEN = {"width": 1280, "height": 720}
#: Bound on one cell with ranks (4 ranks, ~1.5 s of simulated work) on a busy machine.
CELL_TIMEOUT = 90.0
#: Most presses of Space needed to reach the slide with the explorer (Space steps through every cell shown).
MAX_PRESSES = 80

pytestmark = pytest.mark.timeout(600)

# The cells the slideshow shows now: indices of cells whose box intersects the screen and is not hidden.
ON_SCREEN_JS = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell'))
  .map((cell, i) => {
    const r = cell.getBoundingClientRect(), s = getComputedStyle(cell);
    const shown = r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'
                  && r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth;
    return shown ? i : null;
  }).filter(i => i !== null)"""

# Where an element is, whether all of it is on the screen, and whether its centre is really it (not covered).
VISIBLE_JS = """(el) => {
  const r = el.getBoundingClientRect();
  const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height,
          natural: el.naturalWidth || 0, complete: el.complete !== false,
          inside: r.left >= 0 && r.top >= 0 && r.right <= innerWidth + 1 && r.bottom <= innerHeight + 1,
          uncovered: top === el || el.contains(top)};
}"""


@pytest.fixture(scope="module")
def slideshow_available():
    if importlib.util.find_spec("jupyterlab_slideshow") is None:
        unavailable("jupyterlab-slideshow is not installed in this environment (pip install -r requirements.txt)")


def slide_copy(lab) -> list:
    """Write the notebook with its slide metadata and no outputs into the server's root; return the slide
    type of each cell (decided from the stored outputs, as scripts/slides.py does)."""
    nb = nbformat.read(SOURCE, as_version=4)
    types = slides.plan(nb)
    slides.apply(nb, types)
    for cell in nb.cells:  # as if freshly opened: each cell the test runs gets a new execution count
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    (lab.root / PATH).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, lab.root / PATH)
    return types


def first_code_cell_with_ranks(nb, types) -> int:
    """The first code cell on a slide (not skipped) that starts ranks and draws a timeline."""
    for i, cell in enumerate(nb.cells):
        if (
            cell.cell_type == "code"
            and types[i] != slides.SKIP
            and "bl.run(" in cell.source
            and "timeline" in cell.source
        ):
            return i
    raise AssertionError(f"{SOURCE.name}: no code cell on a slide runs ranks and draws a timeline")


def run_cell(page, index: int) -> None:
    """Make cell ``index`` the active one and run it (Run ▸ Run Selected Cell), then wait until it has run."""
    before = page.evaluate(NOTEBOOK_STATE_JS, PATH)["cells"][index]["count"]
    page.evaluate(
        """(index) => { const panel = window.jupyterapp.shell.currentWidget;
                                  panel.content.activeCellIndex = index; }""",
        index,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")

    def ran():
        state = page.evaluate(NOTEBOOK_STATE_JS, PATH)
        count = state["cells"][index]["count"]
        return state["status"] == "idle" and count is not None and count != before and state["cells"][index]

    try:
        cell = wait_for(ran, CELL_TIMEOUT, f"cell {index} to run")
    except AssertionError:
        page.screenshot(path=str(ARTIFACTS / f"slideshow-cell-{index}-timeout.png"))
        state = page.evaluate(NOTEBOOK_STATE_JS, PATH)
        raise AssertionError(
            f"cell {index} did not run within {CELL_TIMEOUT:.0f} s: kernel {state['status']}, "
            f"cell {state['cells'][index]}"
        )
    errors = [f"{o['ename']}: {o['evalue']}" for o in cell["outputs"] if o["type"] == "error"]
    assert not errors, f"cell {index} raised on its slide: {errors}"


ACTIVE_JS = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"


def advance_until(page, wanted: int, shown: list[int]) -> list[int]:
    """Press Space until cell ``wanted`` is on screen.  Space steps through the cells of a slide (the
    active cell moves on) and then to the next slide; every press must do one or the other."""
    for _ in range(MAX_PRESSES):
        if wanted in shown:
            return shown
        where = (shown, page.evaluate(ACTIVE_JS))
        page.keyboard.press("Space")
        try:
            now = wait_for(
                lambda: (
                    (state := (page.evaluate(ON_SCREEN_JS), page.evaluate(ACTIVE_JS))) != where and state[0] and state
                ),
                10,
                f"Space to move on from cells {shown}",
            )
        except AssertionError:
            page.screenshot(path=str(ARTIFACTS / "slideshow-stuck.png"))
            focus = page.evaluate("() => document.activeElement ? document.activeElement.className : null")
            raise AssertionError(
                f"Space did not move on from cell {where[1]} of the slide showing cells {shown} (focus on {focus!r})"
            )
        shown = now[0]
    raise AssertionError(f"cell {wanted} not shown after {MAX_PRESSES} presses of Space (last: cells {shown})")


def test_present_a_notebook_as_slides_and_run_ranks_on_a_slide(browser, lab, slideshow_available, record_property):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    types = slide_copy(lab)
    nb = nbformat.read(lab.root / PATH, as_version=4)
    ranks_cell = first_code_cell_with_ranks(nb, types)
    explorer_cell = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and types[i] != slides.SKIP and "straggler_explorer(" in c.source
    )
    setup = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and types[i] == slides.SKIP and i < ranks_cell]
    assert setup, "the notebook's set-up cell should be skipped on the slides"

    page = open_notebook(browser, lab, PATH)
    try:
        page.set_viewport_size(SCREEN)
        for index in setup:  # the instructor runs the set-up before presenting (presenting.md)
            run_cell(page, index)
        page.evaluate("""() => { const panel = window.jupyterapp.shell.currentWidget;
                                 panel.content.activeCellIndex = 0; }""")
        page.evaluate("() => window.jupyterapp.commands.execute('deck:start')")
        wait_for(
            lambda: page.evaluate("() => document.body.dataset.jpDeckMode") == "presenting",
            20,
            "the slideshow to start (body[data-jp-deck-mode=presenting])",
        )
        shown = wait_for(lambda: page.evaluate(ON_SCREEN_JS), 10, "the first slide")
        assert shown == [0], f"the first slide should show only the title cell, not cells {shown}"
        assert not set(setup) & set(shown)
        page.screenshot(path=str(ARTIFACTS / "slideshow-title.png"))
        page.locator(".jp-Notebook").first.click(position={"x": 640, "y": 40})  # keyboard focus, as a presenter

        shown = advance_until(page, ranks_cell, shown)
        assert not set(setup) & set(shown), f"skipped set-up cells {setup} were shown: {shown}"
        started = time.monotonic()
        run_cell(page, ranks_cell)
        record_property("ranks_cell_seconds", round(time.monotonic() - started, 2))
        image = page.locator(".jp-Notebook .jp-Cell").nth(ranks_cell).locator(".jp-OutputArea-output img").first
        wait_for(lambda: image.evaluate("img => img.complete && img.naturalWidth > 0"), 20, "the timeline to load")
        page.wait_for_timeout(300)  # the slide re-centres once the output has grown
        box = image.evaluate(VISIBLE_JS)
        page.screenshot(path=str(ARTIFACTS / "slideshow-ranks.png"))
        assert box["inside"] and box["uncovered"] and box["height"] > 200, (
            f"the timeline of cell {ranks_cell} is not wholly visible on the 1280x720 slide: {box}"
        )
        record_property("timeline_px", f"{box['width']:.0f}x{box['height']:.0f}")

        shown = advance_until(page, explorer_cell, page.evaluate(ON_SCREEN_JS))
        defining = [
            i
            for i in range(ranks_cell + 1, explorer_cell)
            if nb.cells[i].cell_type == "code"
            and "explore_straggler(" in nb.cells[i].source
            and types[i] != slides.SKIP
        ]
        for index in defining + [explorer_cell]:  # explore_straggler(...) defines what the explorer starts from
            run_cell(page, index)
        panel = page.locator(".barrierlab-explorer-panel").first
        figure = page.locator("img.barrierlab-explorer, .barrierlab-explorer img").first
        wait_for(
            lambda: figure.count() and figure.evaluate("img => img.complete && img.naturalWidth > 0"),
            30,
            "the explorer's figure on its slide",
        )
        panel.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        box = figure.evaluate(VISIBLE_JS)
        page.screenshot(path=str(ARTIFACTS / "slideshow-explorer.png"))
        assert box["inside"] and box["uncovered"], f"the explorer's figure does not fit the 1280x720 slide: {box}"
        slow_rank = page.locator(
            ".widget-dropdown", has=page.locator(".widget-label", has_text=re.compile("^slow rank$"))
        ).locator("select")
        assert slow_rank.evaluate(VISIBLE_JS)["inside"], "the explorer's controls are off the slide"
        before = figure.get_attribute("src")
        started = time.monotonic()
        slow_rank.select_option(label="2")
        wait_for(lambda: figure.get_attribute("src") != before, REDRAW_TIMEOUT, "the explorer to redraw on its slide")
        record_property("explorer_redraw_seconds_on_slide", round(time.monotonic() - started, 2))
        status = page.locator(".barrierlab-explorer-status").first
        wait_for(lambda: status.inner_text().startswith("redrawn in"), 10, "the explorer's status line")
        record_property("explorer_status", status.inner_text())
        page.screenshot(path=str(ARTIFACTS / "slideshow-explorer-redrawn.png"))

        page.keyboard.press("Escape")
        wait_for(
            lambda: page.evaluate("() => document.body.dataset.jpDeckMode") != "presenting",
            10,
            "Escape to end the slideshow",
        )
    finally:
        kernel = page.evaluate(NOTEBOOK_STATE_JS, PATH) if not page.is_closed() else None
        page.close()
    if kernel and kernel["kernel"]:
        kernel_gone_after_shutdown(lab, kernel["kernel"])
