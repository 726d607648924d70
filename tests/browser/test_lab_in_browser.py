"""The lab as learners meet it: JupyterLab in headless Chromium, Run ▸ Run All Cells, and what they then see.

nbval proves the kernel side; these tests prove the browser side: every cell runs, the only errors are the
intended ones, timelines render as images, the straggler explorer's controls re-run the ranks and redraw
the figure, and interrupting or restarting the kernel ends its ranks.  Screenshots go to artifacts/browser/.

A private JupyterLab runs on 127.0.0.1 (a free port, a random token); everything is temporary: the notebooks are copies in a temp root_dir, Jupyter's config/runtime/data dirs,
JupyterLab's settings and workspaces, IPython's profile and Chromium's profile all live under one temp dir.
Teardown stops the server and checks that no process it started (kernels, barrierlab's warm process, ranks)
is still running.

Which notebooks: ``BARRIERLAB_BROWSER_NOTEBOOKS`` (paths relative to the repository, separated by spaces or
commas; globs allowed), default notebooks 00 and 05.  Which browser:
``BARRIERLAB_CHROMIUM`` or the first of chromium / chromium-browser / google-chrome on PATH.  Without a
browser or Playwright the tests skip, except under CI (``CI`` set and not "false"), where they fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import psutil
import pytest

import barrierlab_kernel

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
#: Lesson 00 in full, and notebook 05's straggler explorer on its own (tests/browser/notebooks/): the rest of
#: every lesson runs under nbval; BARRIERLAB_BROWSER_NOTEBOOKS="notebooks/*.ipynb" runs them all here.
DEFAULT_NOTEBOOKS = "notebooks/00_*.ipynb tests/browser/notebooks/explorer.ipynb"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Launch flags known to work in containers without a GPU, a sandbox or network access.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
SERVER_START_TIMEOUT = 60.0
SERVER_STOP_TIMEOUT = 20.0


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str):
    """Skip on a laptop; fail under CI, where the browser test must run."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip: run scripts/setup_browser.sh)")
    pytest.skip(f"{reason}; run scripts/setup_browser.sh to enable the browser tests")


def notebook_paths() -> list[str]:
    """Repository-relative paths of the notebooks to open, in order; a pattern with no match is reported."""
    spec = os.environ.get("BARRIERLAB_BROWSER_NOTEBOOKS", DEFAULT_NOTEBOOKS)
    found: list[str] = []
    for pattern in spec.replace(",", " ").split():
        matches = (
            sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(pattern))
            if any(c in pattern for c in "*?[")
            else [pattern]
        )
        found.extend(matches or [f"<no match for {pattern}>"])
    return found


def find_chromium() -> str | None:
    explicit = os.environ.get("BARRIERLAB_CHROMIUM")
    if explicit:
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        explicit = os.environ.get("BARRIERLAB_CHROMIUM")
        unavailable(
            f"BARRIERLAB_CHROMIUM={explicit} is not an executable file"
            if explicit
            else "no Chromium found (looked for " + ", ".join(BROWSERS) + " on PATH)"
        )
    return path


#: The one Playwright of the session: the other browser test modules import these fixtures, which makes pytest
#: set them up once per module, and Playwright's sync API cannot be started twice in one process.
_PLAYWRIGHT: list = []


@pytest.fixture(scope="session")
def playwright_api():
    if _PLAYWRIGHT:
        yield _PLAYWRIGHT[0]
        return
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (pip install -r requirements-browser.txt)")
    with sync_playwright() as api:
        _PLAYWRIGHT.append(api)
        try:
            yield api
        finally:
            _PLAYWRIGHT.clear()


@pytest.fixture(scope="session")
def browser_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lab")


@pytest.fixture(scope="session")
def browser(playwright_api, chromium_path, browser_home):
    """Headless Chromium with a new, empty profile; its crash reports and caches stay in the temp dir too."""
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(browser_home / "xdg-config"),
        "XDG_CACHE_HOME": str(browser_home / "xdg-cache"),
    }
    context = playwright_api.chromium.launch_persistent_context(
        str(browser_home / "chromium-profile"),
        executable_path=chromium_path,
        headless=True,
        env=env,
        args=CHROMIUM_ARGS,
        viewport={"width": 1400, "height": 1000},
        timeout=60_000,
    )
    try:
        yield context
    finally:
        context.close()
        mine = [p for p in psutil.process_iter() if _mentions(p, str(browser_home))]
        left = still_running(mine, 10.0)
        assert not left, f"browser processes outlived the tests: {describe(left)}"


def _mentions(proc: psutil.Process, text: str) -> bool:
    try:
        return any(text in part for part in proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


class Lab:
    """A running JupyterLab server: where it is, how to reach it, and the processes it started."""

    def __init__(self, process: subprocess.Popen, url: str, token: str, root: Path, runtime: Path) -> None:
        self.process, self.url, self.token, self.root, self.runtime = process, url, token, root, runtime
        self.seen: dict[int, psutil.Process] = {}  # every descendant ever observed, checked at teardown

    def api(self, method: str, path: str, body: dict | None = None) -> object:
        request = urllib.request.Request(
            f"{self.url}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            data = response.read()
        return json.loads(data) if data else None

    def descendants(self) -> list[psutil.Process]:
        """The server's live descendants, remembered for the final leftover check."""
        try:
            found = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        for proc in found:
            self.seen.setdefault(proc.pid, proc)
        return found

    def kernel_process(self, kernel_id: str, wait: float = 30.0) -> psutil.Process:
        """The kernel's process (found by its connection file); waits for one being (re)started."""
        give_up = time.monotonic() + wait
        while True:
            for proc in self.descendants():
                try:
                    if proc.status() != psutil.STATUS_ZOMBIE and any(
                        f"kernel-{kernel_id}.json" in part for part in proc.cmdline()
                    ):
                        return proc
                except psutil.Error:
                    pass
            if time.monotonic() > give_up:
                raise AssertionError(f"no process of kernel {kernel_id} among the server's children")
            time.sleep(0.1)

    def family(self, kernel_id: str) -> list[psutil.Process]:
        """The kernel and everything under it: barrierlab's warm process (its own session) and its ranks."""
        kernel = self.kernel_process(kernel_id)
        members = [kernel] + kernel.children(recursive=True)
        for proc in members:
            self.seen.setdefault(proc.pid, proc)
        return members

    def notebook_url(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?reset&token={self.token}"


def still_running(procs, seconds: float) -> list[psutil.Process]:
    """Those of ``procs`` still running (not zombies) after up to ``seconds``; PID reuse cannot fool it."""
    give_up = time.monotonic() + seconds
    while True:
        alive = []
        for proc in procs:
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() >= give_up:
            return alive
        time.sleep(0.05)


def describe(procs) -> str:
    lines = []
    for proc in procs:
        try:
            lines.append(f"pid {proc.pid}: {' '.join(proc.cmdline())[:160]}")
        except psutil.NoSuchProcess:
            lines.append(f"pid {proc.pid}: (gone)")
    return "; ".join(lines)


def _write_settings(home: Path) -> dict[str, str]:
    """Jupyter dirs under ``home``: no user settings are read or written; no news, no update check."""
    dirs = {
        name: home / name
        for name in ("config", "runtime", "data", "lab-settings", "lab-workspaces", "ipython", "matplotlib")
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    (dirs["config"] / "jupyter_server_config.json").write_text(
        json.dumps(
            {
                "LabApp": {
                    "news_url": None,
                    "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
                    "expose_app_in_browser": True,
                    "extension_manager": "readonly",
                },
                "LanguageServerManager": {"autodetect": False},
            }
        )
    )
    notification = dirs["lab-settings"] / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    return {
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTERLAB_SETTINGS_DIR": str(dirs["lab-settings"]),
        "JUPYTERLAB_WORKSPACES_DIR": str(dirs["lab-workspaces"]),
        "IPYTHONDIR": str(dirs["ipython"]),
        "MPLCONFIGDIR": str(dirs["matplotlib"]),
        "JUPYTER_PLATFORM_DIRS": "1",
    }


def _wait_for_server(process: subprocess.Popen, runtime: Path, token: str, log: Path) -> str:
    """The server's base URL, read from its runtime file (it picked a free port itself: port 0)."""
    give_up = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < give_up:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with code {process.returncode}:\n{log.read_text()[-3000:]}")
        for info_file in runtime.glob(f"jpserver-{process.pid}.json"):
            try:
                info = json.loads(info_file.read_text())
            except ValueError:
                continue  # being written
            url = f"http://127.0.0.1:{info['port']}"
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2).read()
                return url
            except OSError:
                pass
        time.sleep(0.2)
    raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_TIMEOUT:.0f} s:\n{log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM (the server then shuts its kernels down), SIGKILL only if it does not exit in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(SERVER_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def notebook_root(browser_home) -> Path:
    """A temp root_dir holding copies of the notebooks under test, at the same relative paths."""
    root = browser_home / "root"
    for rel in notebook_paths():
        source = ROOT / rel
        if source.is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / rel)
    root.mkdir(exist_ok=True)
    # The server can only read and write under root_dir (JupyterLab autosaves open notebooks): not the repo.
    assert not root.resolve().is_relative_to(ROOT) and not ROOT.is_relative_to(root.resolve())
    return root


@pytest.fixture(scope="session")
def lab(browser_home, notebook_root, chromium_path):
    """JupyterLab from this environment on 127.0.0.1, a free port, a random token, no browser of its own."""
    with running_lab(browser_home, notebook_root) as server:
        yield server


@contextlib.contextmanager
def running_lab(browser_home: Path, notebook_root: Path):
    """The ``lab`` fixture's server (benchmarks/first_figure_browser.py starts its own with it): stopped at the
    end, with a check that nothing it started is still running."""
    env = {**os.environ, **_write_settings(browser_home)}
    env.pop("JUPYTER_PATH", None)
    # What `make setup` installs in the environment's etc/jupyter (python -m barrierlab_kernel install): the
    # save hook that keeps live views out of saved notebooks. Installed here by the same function into a
    # temp prefix, so the lab has it whether or not this environment was set up before the hook existed.
    barrierlab_kernel.install_save_hook(str(browser_home / "env"))
    env["JUPYTER_CONFIG_PATH"] = str(browser_home / "env" / "etc" / "jupyter")
    token = secrets.token_hex(24)
    log = browser_home / "jupyterlab.log"
    runtime = Path(env["JUPYTER_RUNTIME_DIR"])
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                "--ServerApp.port=0",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={notebook_root}",
                "--ServerApp.open_browser=False",
                "--ServerApp.terminals_enabled=False",
            ]
            + (["--allow-root"] if os.geteuid() == 0 else []),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=notebook_root,
            start_new_session=True,
        )
    server = None
    try:
        server = Lab(process, _wait_for_server(process, runtime, token, log), token, notebook_root, runtime)
        yield server
    finally:
        if server is not None:
            server.descendants()
        _stop(process)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(log, ARTIFACTS / "jupyterlab.log")
        if server is not None:
            left = still_running(server.seen.values(), 5.0)
            assert not left, f"processes started by JupyterLab outlived it: {describe(left)}"


#: Bound on Run All for one notebook (kernel start included).
RUN_ALL_TIMEOUT = 180.0
#: Bound on one explorer re-run (ranks + figure) after a control changes.
REDRAW_TIMEOUT = 60.0
#: Bound on the kernel, its warm process and its ranks being gone after shutdown / interrupt / restart.
GONE_TIMEOUT = 10.0
EXPLORER_CONTROLS = ("world size", "delay (s)", "slow rank", "barrier every")

pytestmark = pytest.mark.timeout(600)

# Read state from JupyterLab's own model (exposed with LabApp.expose_app_in_browser): every cell, even the
# ones the browser has not laid out yet.
NOTEBOOK_STATE_JS = """(path) => {
  const app = window.jupyterapp;
  if (!app) return null;
  const panel = Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
  if (!panel || !panel.content.model) return null;
  const kernel = panel.sessionContext.session ? panel.sessionContext.session.kernel : null;
  const model = panel.content.model, cells = [];
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    if (cell.type !== 'code') { cells.push(null); continue; }
    const outputs = [];
    for (let j = 0; j < cell.outputs.length; j++) {
      const o = cell.outputs.get(j).toJSON();
      outputs.push({type: o.output_type, name: o.name || null, ename: o.ename || null, evalue: o.evalue || null,
                    text: o.output_type === 'stream' ? String(o.text).slice(0, 300) : null,
                    png: !!(o.data && o.data['image/png']),
                    widget: !!(o.data && o.data['application/vnd.jupyter.widget-view+json'])});
    }
    cells.push({count: cell.executionCount, source: cell.sharedModel.getSource(), outputs});
  }
  return {ready: panel.context.isReady && panel.sessionContext.isReady,
          status: kernel ? kernel.status : 'none', kernel: kernel ? kernel.id : null, cells};
}"""

IMAGES_JS = """async (panel) => {
  const images = Array.from(panel.querySelectorAll('.jp-OutputArea-output img'));
  await Promise.all(images.map(img => img.decode().catch(() => null)));
  return images.map(img => ({width: img.naturalWidth, cls: img.className}));
}"""


def slug(path: str) -> str:
    return Path(path).stem


def intended_errors(path: Path) -> set[int]:
    """Indices of the cells meant to raise: tagged ``raises-exception`` or marked ``NBVAL_RAISES_EXCEPTION``."""
    nb = nbformat.read(path, as_version=4)
    return {
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and ("raises-exception" in cell.metadata.get("tags", []) or "NBVAL_RAISES_EXCEPTION" in cell.source)
    }


def comment_only_markers(path: Path) -> list[int]:
    """Cells marked only by the nbval comment: JupyterLab honours the tag, not the comment, so Run All stops there."""
    nb = nbformat.read(path, as_version=4)
    return [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and "NBVAL_RAISES_EXCEPTION" in cell.source
        and "raises-exception" not in cell.metadata.get("tags", [])
    ]


def open_notebook(browser, lab, path: str):
    page = browser.new_page()
    page.set_default_timeout(30_000)
    page.goto(lab.notebook_url(path), wait_until="domcontentloaded", timeout=60_000)
    wait_for(
        lambda: (s := _state_of(page, path)) and s["ready"] and s["status"] == "idle",
        180,  # generous: at the end of a loaded CI run the lab took more than 90 s (session 19)
        f"{path} opened with an idle kernel",
    )
    return page


def _state_of(page, path: str):
    """NOTEBOOK_STATE_JS's answer, or None while the page is navigating (JupyterLab redirects as it loads: a
    fresh-clone CI saw "Execution context was destroyed, most likely because of a navigation")."""
    from playwright.sync_api import Error

    try:
        return page.evaluate(NOTEBOOK_STATE_JS, path)
    except Error as error:
        if "Execution context was destroyed" in str(error) or "navigat" in str(error):
            return None
        raise


def wait_for(predicate, seconds: float, what: str, interval: float = 0.25):
    give_up = time.monotonic() + seconds
    while time.monotonic() < give_up:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"waited {seconds:.0f} s for: {what}")


def menu(page, top: str, item: str) -> None:
    """Click a JupyterLab main-menu entry, as a learner would (e.g. Run ▸ Run All Cells)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).first.click()


def run_all(page, path: str) -> dict:
    """Clear every output, Run ▸ Run All Cells, wait until the kernel is idle and every code cell has run."""
    menu(page, "Edit", "Clear Outputs of All Cells")
    wait_for(
        lambda: all(c is None or c["count"] is None for c in page.evaluate(NOTEBOOK_STATE_JS, path)["cells"]),
        10,
        "outputs cleared",
    )
    menu(page, "Run", "Run All Cells")
    state = {}

    def finished():
        state.update(page.evaluate(NOTEBOOK_STATE_JS, path))
        code = [c for c in state["cells"] if c is not None and c["source"].strip()]
        return state["status"] == "idle" and all(c["count"] is not None for c in code)

    try:
        wait_for(finished, RUN_ALL_TIMEOUT, f"Run All on {path}: idle kernel, every code cell executed", 0.5)
    except AssertionError:
        page.screenshot(path=str(ARTIFACTS / f"{slug(path)}-timeout.png"))
        missing = [i for i, c in enumerate(state.get("cells", [])) if c and c["source"].strip() and c["count"] is None]
        raise AssertionError(f"{path}: kernel {state.get('status')}, cells without an execution count: {missing}")
    return state


def check_errors(path: str, state: dict) -> None:
    intended = intended_errors(ROOT / path)
    unexpected = {
        i: f"{o['ename']}: {o['evalue']}"
        for i, c in enumerate(state["cells"])
        if c
        for o in c["outputs"]
        if o["type"] == "error" and i not in intended
    }
    assert not unexpected, f"{path}: error outputs in cells not meant to raise (cell index: error): {unexpected}"
    silent = [i for i in intended if not any(o["type"] == "error" for o in state["cells"][i]["outputs"])]
    assert not silent, f"{path}: cells marked to raise did not raise: {silent}"
    counts = [c["count"] for c in state["cells"] if c and c["source"].strip()]
    assert counts == sorted(counts) and len(set(counts)) == len(counts), (
        f"{path}: cells did not run once each, top to bottom: execution counts {counts}"
    )


def kernel_gone_after_shutdown(lab, kernel_id: str) -> float:
    """Shut the kernel down as JupyterLab does (REST), return how long until it and its processes were gone."""
    family = lab.family(kernel_id)
    started = time.monotonic()
    lab.api("DELETE", f"/api/kernels/{kernel_id}")
    left = still_running(family, GONE_TIMEOUT)
    assert not left, f"still running {GONE_TIMEOUT:.0f} s after kernel shutdown: {describe(left)}"
    return time.monotonic() - started


@pytest.mark.parametrize("path", notebook_paths())
def test_run_all_in_the_browser(browser, lab, path, record_property):
    if not (ROOT / path).is_file():
        pytest.skip(f"{path} does not exist (yet)")
    lone = comment_only_markers(ROOT / path)
    assert not lone, (
        f"{path}: cells {lone} say NBVAL_RAISES_EXCEPTION but lack the raises-exception tag; "
        "JupyterLab's Run All stops at the first error unless the cell is tagged"
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = open_notebook(browser, lab, path)
    try:
        started = time.monotonic()
        state = run_all(page, path)
        record_property("run_all_seconds", round(time.monotonic() - started, 1))
        page.screenshot(path=str(ARTIFACTS / f"{slug(path)}-after-run-all.png"))
        check_errors(path, state)

        panel = page.locator(".jp-NotebookPanel:visible")
        pngs = sum(o["png"] for c in state["cells"] if c for o in c["outputs"])
        images = panel.evaluate(IMAGES_JS)
        assert len(images) >= pngs, f"{path}: {pngs} PNG outputs but only {len(images)} img elements"
        blank = [i for i, img in enumerate(images) if img["width"] == 0]
        assert not blank, f"{path}: output images that did not render (naturalWidth 0): {blank} of {len(images)}"
        record_property("images", len(images))
        if images:
            panel.locator(".jp-OutputArea-output img").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"{slug(path)}-first-figure.png"))

        if page.locator(".barrierlab-explorer").count():
            check_explorer(page, path, record_property)
    finally:
        kernel = page.evaluate(NOTEBOOK_STATE_JS, path) if not page.is_closed() else None
        page.close()
    if kernel and kernel["kernel"]:
        record_property("kernel_shutdown_seconds", round(kernel_gone_after_shutdown(lab, kernel["kernel"]), 2))


def check_explorer(page, path: str, record_property) -> None:
    """The explorer's controls render; a new "slow rank" re-runs the ranks and redraws the timeline."""
    explorer = page.locator(".barrierlab-explorer-panel, .widget-box:has(.barrierlab-explorer)").first
    explorer.scroll_into_view_if_needed()
    image = page.locator("img.barrierlab-explorer, .barrierlab-explorer img").first
    wait_for(lambda: image.evaluate("img => img.naturalWidth") > 0, 30, "the explorer's first timeline")
    for name in EXPLORER_CONTROLS:
        control = page.locator(
            ".jupyter-widgets", has=page.locator(".widget-label", has_text=re.compile(f"^{re.escape(name)}$"))
        )
        assert control.count(), f"{path}: the explorer has no control labelled {name!r}"
    explorer.screenshot(path=str(ARTIFACTS / f"{slug(path)}-explorer-before.png"))
    before = image.get_attribute("src")

    slow_rank = page.locator(
        ".widget-dropdown", has=page.locator(".widget-label", has_text=re.compile("^slow rank$"))
    ).locator("select")
    options = slow_rank.evaluate("s => Array.from(s.options).map(o => ({label: o.label, selected: o.selected}))")
    choice = next(o["label"] for o in reversed(options) if not o["selected"] and o["label"].isdigit())
    started = time.monotonic()
    slow_rank.select_option(label=choice)
    wait_for(
        lambda: image.get_attribute("src") != before,
        REDRAW_TIMEOUT,
        f"the explorer's timeline to change after slow rank -> {choice}",
    )
    wait_for(lambda: image.evaluate("img => img.complete && img.naturalWidth > 0"), 10, "the new timeline to load")
    record_property("explorer_redraw_seconds", round(time.monotonic() - started, 2))
    summary = page.locator(".barrierlab-explorer-summary").first
    if summary.count():
        wait_for(
            lambda: f"rank {choice} held" in summary.inner_text() or "Could not" in summary.inner_text(),
            10,
            "the explorer's summary to update",
        )
        assert "Could not run" not in summary.inner_text() and "did not finish" not in summary.inner_text(), (
            summary.inner_text()
        )
    explorer.screenshot(path=str(ARTIFACTS / f"{slug(path)}-explorer-after.png"))


def ranks_of(lab, kernel_id: str) -> list:
    """Rank processes: grandchildren of the kernel (kernel -> warm process -> ranks)."""
    kernel = lab.kernel_process(kernel_id)
    return [p for warm in kernel.children() for p in warm.children()]


def test_interrupt_and_restart_end_the_ranks(browser, lab, record_property):
    """Kernel ▸ Interrupt stops a run and its ranks; Kernel ▸ Restart ends the warm process and the ranks."""
    path = "scratch/interrupt_and_restart.ipynb"
    nb = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    nb.cells = [
        nbformat.v4.new_code_cell("import time\nimport torch.distributed as dist\nimport barrierlab as bl"),
        nbformat.v4.new_code_cell(
            "def wait_a_minute():\n    dist.barrier()\n    time.sleep(60)\n\n"
            "run = bl.run(wait_a_minute, 2, timeout=90, deadline=90)"
        ),
    ]
    (lab.root / "scratch").mkdir(exist_ok=True)
    nbformat.write(nb, lab.root / path)
    page = open_notebook(browser, lab, path)
    kernel_id = page.evaluate(NOTEBOOK_STATE_JS, path)["kernel"]
    try:
        menu(page, "Run", "Run All Cells")
        ranks = wait_for(lambda: len(r := ranks_of(lab, kernel_id)) == 2 and r, 60, "two ranks running")
        lab.family(kernel_id)
        started = time.monotonic()
        menu(page, "Kernel", "Interrupt Kernel")
        left = still_running(ranks, GONE_TIMEOUT)
        assert not left, f"ranks still running {GONE_TIMEOUT:.0f} s after Interrupt: {describe(left)}"
        record_property("interrupt_seconds", round(time.monotonic() - started, 2))
        state = wait_for(
            lambda: (s := page.evaluate(NOTEBOOK_STATE_JS, path))["status"] == "idle" and s,
            20,
            "the kernel idle after the interrupt",
        )
        errors = [o["ename"] for o in state["cells"][1]["outputs"] if o["type"] == "error"]
        assert errors == ["KeyboardInterrupt"], state["cells"][1]["outputs"]
        page.screenshot(path=str(ARTIFACTS / "interrupt-after.png"))

        menu(page, "Run", "Run All Cells")
        ranks = wait_for(lambda: len(r := ranks_of(lab, kernel_id)) == 2 and r, 60, "two ranks running again")
        family = lab.family(kernel_id)
        started = time.monotonic()
        menu(page, "Kernel", "Restart Kernel…")
        page.locator(".jp-Dialog button", has_text=re.compile("^Restart$")).click()
        left = still_running(family, GONE_TIMEOUT)
        assert not left, f"still running {GONE_TIMEOUT:.0f} s after Restart: {describe(left)}"
        record_property("restart_seconds", round(time.monotonic() - started, 2))
        restarted = lab.kernel_process(kernel_id)
        assert restarted.pid != family[0].pid
        # The restarted kernel works: the imports cell (above the selected one) runs as its first execution.
        wait_for(lambda: page.evaluate(NOTEBOOK_STATE_JS, path)["status"] == "idle", 60, "the restarted kernel idle")
        menu(page, "Run", "Run All Above Selected Cell")
        wait_for(
            lambda: (s := page.evaluate(NOTEBOOK_STATE_JS, path))["cells"][0]["count"] == 1 and s["status"] == "idle",
            60,
            "the imports cell run again in the restarted kernel",
        )
        page.screenshot(path=str(ARTIFACTS / "restart-after.png"))
    finally:
        state = page.evaluate(NOTEBOOK_STATE_JS, path)
        page.close()
    if state and state["kernel"]:
        kernel_gone_after_shutdown(lab, state["kernel"])
