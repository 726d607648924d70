"""A notebook run and saved in the lab still passes nbval: what an instructor who commits from the lab relies on.

The launcher's test notebook (five runs of ranks, each showing the live view in the lab) is copied into the test server's root, opened, cleared and
run with Run ▸ Run All Cells, saved with Ctrl+S, and then checked as CI checks it: nbval on the saved file. The
lab is set up as ``make lab`` sets it up, save hook included (see the ``lab`` fixture). The server, browser and
leftover-process checks are those of test_lab_in_browser.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_lab_in_browser import (  # noqa: E402  (shared fixtures and helpers of the browser tests)
    ARTIFACTS,
    NOTEBOOK_STATE_JS,
    ROOT,
    browser,
    browser_home,
    check_errors,
    chromium_path,
    kernel_gone_after_shutdown,
    lab,
    notebook_root,
    open_notebook,
    playwright_api,
    run_all,
    wait_for,
)

SOURCE = "tests/notebooks/launcher_in_a_notebook.ipynb"  # lesson 00 runs in full in test_lab_in_browser.py
PATH = "saved/launcher_in_a_notebook.ipynb"
#: Bound on the nbval run of the saved notebook (a kernel, every cell again).
NBVAL_TIMEOUT = 420
LIVE_VIEW = "live view"  # the metadata value of the live view's display (barrierlab/live.py)

#: The lab's own model of the open notebook: how many outputs are live views, and whether it is unsaved.
LAB_MODEL_JS = """(path) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === path);
  const model = panel.content.model;
  let live = 0;
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    if (cell.type !== 'code') continue;
    for (let j = 0; j < cell.outputs.length; j++) {
      const meta = cell.outputs.get(j).toJSON().metadata || {};
      if (meta.barrierlab === 'live view') live++;
    }
  }
  return {live, dirty: model.dirty};
}"""

pytestmark = pytest.mark.timeout(900)


def empty_displays(notebook: dict) -> list[tuple[int, dict]]:
    """Display outputs that show nothing (a live view emptied at the end of its run) or are live views."""
    found = []
    for index, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", ()):
            if output["output_type"] not in ("display_data", "update_display_data"):
                continue
            shown = {mime: "".join(v) if isinstance(v, list) else v for mime, v in output.get("data", {}).items()}
            rich = [value for mime, value in shown.items() if mime != "text/plain"]
            blank = not shown or (rich and not any(rich))
            if blank or (output.get("metadata") or {}).get("barrierlab") == LIVE_VIEW:
                found.append((index, output))
    return found


def test_a_notebook_run_and_saved_in_the_lab_passes_nbval(browser, lab, notebook_root, record_property):
    target = notebook_root / PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((ROOT / SOURCE).read_bytes())

    page = open_notebook(browser, lab, PATH)
    kernel = page.evaluate(NOTEBOOK_STATE_JS, PATH)["kernel"]
    try:
        state = run_all(page, PATH)
        check_errors(SOURCE, state)
        shown = page.evaluate(LAB_MODEL_JS, PATH)
        record_property("live_views_in_the_lab", shown["live"])
        assert shown["live"] > 0, "no run showed the live view in the lab: this test would prove nothing"

        before = lab.api("GET", f"/api/contents/{PATH}?content=0")["last_modified"]
        page.locator(".jp-NotebookPanel:visible .jp-Notebook").first.click(position={"x": 5, "y": 5})
        page.keyboard.press("Escape")  # command mode: Ctrl+S is the lab's save, not the browser's
        page.keyboard.press("Control+s")
        wait_for(
            lambda: (
                not page.evaluate(LAB_MODEL_JS, PATH)["dirty"]
                and lab.api("GET", f"/api/contents/{PATH}?content=0")["last_modified"] != before
            ),
            30,
            "Ctrl+S to save the notebook",
        )
        page.screenshot(path=str(ARTIFACTS / "saved-launcher.png"))
    finally:
        page.close()
        if kernel:
            kernel_gone_after_shutdown(lab, kernel)

    saved = json.loads(target.read_text())
    left = empty_displays(saved)
    assert not left, f"the saved notebook keeps {len(left)} empty or live-view displays, the first: {left[0]}"

    started = time.monotonic()
    nbval = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "-q", "--nbval", "--nbval-current-env"]
        + ["--nbval-cell-timeout=120", "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg")]
        + [str(target)],
        cwd=target.parent,
        capture_output=True,
        text=True,
        timeout=NBVAL_TIMEOUT,
    )
    record_property("nbval_seconds", round(time.monotonic() - started, 1))
    (ARTIFACTS / "saved-launcher-nbval.txt").write_text(nbval.stdout + nbval.stderr)
    summary = nbval.stdout.strip().splitlines()[-1] if nbval.stdout.strip() else ""
    record_property("nbval", summary)
    assert nbval.returncode == 0, f"nbval on the notebook saved from the lab: {summary}\n{nbval.stdout[-4000:]}"
    assert " passed" in summary and "failed" not in summary, summary
