"""The live view in a real JupyterLab: while a deadlock runs, the cell shows one line per rank that changes
as time passes ("in barrier #1 since 1.2 s", the time left to the deadline); when the run ends, the live
lines are gone and the run's own result is what stays under the cell.

A small notebook is written into the test server's root; the server, browser and leftover-process checks
are those of test_lab_in_browser.py. Screenshots: artifacts/browser/live-view-*.png.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_lab_in_browser import (  # noqa: E402  (shared fixtures and helpers of the browser tests)
    ARTIFACTS,
    NOTEBOOK_STATE_JS,
    browser,
    browser_home,
    chromium_path,
    kernel_gone_after_shutdown,
    lab,
    menu,
    notebook_root,
    open_notebook,
    playwright_api,
    wait_for,
)

PATH = "live/deadlock.ipynb"
#: The deadlock: rank 0 waits in a barrier that rank 1 never calls; rank 1 lingers like a busy rank.
CELLS = [
    "import torch.distributed as dist\nimport barrierlab as bl",
    "def conditional_barrier():\n"
    "    if dist.get_rank() == 0:\n"
    "        dist.barrier()\n"
    "    return dist.get_rank()\n\n"
    "run = bl.run(conditional_barrier, 2, timeout=4, deadline=5, linger=True)\n"
    "print(run.headline())",
]
OUTPUT_TEXT_JS = """(index) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const cell = panel && panel.querySelectorAll('.jp-Notebook .jp-CodeCell')[index];
  const out = cell && cell.querySelector('.jp-OutputArea');
  return out ? out.innerText : '';
}"""

pytestmark = pytest.mark.timeout(300)


def _write_notebook(target: Path, cells: list[str]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, target)


def _run_and_watch(page, screenshot: str | None = None) -> tuple[list[str], str]:
    """Run all cells; every distinct live view of the second cell's output until the run's headline replaces it
    (60 s at most), and that final output. ``screenshot``: saved at the second live view."""
    menu(page, "Run", "Run All Cells")
    seen: list[str] = []
    give_up = time.monotonic() + 60
    while time.monotonic() < give_up:
        text = page.evaluate(OUTPUT_TEXT_JS, 1)
        if "deadline in" in text and (not seen or text != seen[-1]):
            seen.append(text)
            if len(seen) == 2 and screenshot:
                page.screenshot(path=str(ARTIFACTS / screenshot))
        if "ranks in" in text:  # the run's headline: it has ended
            break
        time.sleep(0.2)
    return seen, page.evaluate(OUTPUT_TEXT_JS, 1)


def test_the_live_view_changes_during_a_deadlock_and_gives_way_to_the_result(
    browser, lab, notebook_root, record_property
):
    _write_notebook(notebook_root / PATH, CELLS)
    page = open_notebook(browser, lab, PATH)
    kernel = page.evaluate(NOTEBOOK_STATE_JS, PATH)["kernel"]
    try:
        seen, final = _run_and_watch(page, "live-view-during.png")
        page.screenshot(path=str(ARTIFACTS / "live-view-after.png"))
        record_property("live_snapshots", len(seen))

        assert len(seen) >= 2, f"the live view did not change while the deadlock ran; saw {seen!r}"
        assert any("rank 0" in s and "in barrier #1 since" in s for s in seen), seen
        assert any("rank 1" in s and "finished" in s for s in seen), seen
        assert "2 ranks in" in final, f"the run's result is not under the cell: {final!r}"
        assert "deadline in" not in final and "since" not in final, f"live lines left behind: {final!r}"
        wait_for(lambda: page.evaluate(NOTEBOOK_STATE_JS, PATH)["status"] == "idle", 30, "kernel idle")
    finally:
        page.close()
        if kernel:
            kernel_gone_after_shutdown(lab, kernel)


STARTUP_PATH = "live/startup.ipynb"
#: attack26 a22: rank 3's argument takes a minute to unpickle (its __reduce__ sleeps), so ranks 0-2 wait in
#: barrierlab's start-up for it to join the group; their function has not started.
STARTUP_CELLS = [
    "import os, time\nimport torch.distributed as dist\nimport barrierlab as bl",
    "def _stall():\n"
    "    if os.environ.get('RANK') == '3':\n"
    "        time.sleep(60)\n"
    "    return 'arg'\n\n"
    "class Stall:\n"
    "    def __reduce__(self):\n"
    "        return (_stall, ())\n\n"
    "def quick(arg):\n"
    "    dist.barrier()\n"
    "    return dist.get_rank()\n\n"
    "run = bl.run(quick, 4, args=(Stall(),), timeout=3, deadline=6)\n"
    "print(run.headline())",
]


def test_the_live_view_says_the_ranks_wait_for_the_group_not_that_they_run_the_learners_code(
    browser, lab, notebook_root, record_property
):
    """attack26 a22, in a real browser: while rank 3 never starts (its argument's unpickling hangs), the live
    lines of ranks 0-2 said "running your code"; they wait in barrierlab's start-up for the group to form."""
    _write_notebook(notebook_root / STARTUP_PATH, STARTUP_CELLS)
    page = open_notebook(browser, lab, STARTUP_PATH)
    kernel = page.evaluate(NOTEBOOK_STATE_JS, STARTUP_PATH)["kernel"]
    try:
        seen, final = _run_and_watch(page)
        page.screenshot(path=str(ARTIFACTS / "live-view-startup-after.png"))
        record_property("live_snapshots", len(seen))
        assert seen, f"no live view while the run waited; final output {final!r}"
        lines = [line for line in seen[-1].splitlines() if line.strip().startswith("rank ")]
        waiting = [line for line in lines if "waiting for the other ranks to join the group" in line]
        assert len(waiting) >= 3, f"ranks 0-2 should wait for the group to form: {lines!r}"
        assert not any("running your code" in line for line in lines[:3]), lines
        assert "4 ranks in" in final and "deadline in" not in final, final
        wait_for(lambda: page.evaluate(NOTEBOOK_STATE_JS, STARTUP_PATH)["status"] == "idle", 30, "kernel idle")
    finally:
        page.close()
        if kernel:
            kernel_gone_after_shutdown(lab, kernel)
