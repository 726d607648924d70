"""`make lab` starts JupyterLab on 127.0.0.1, prints (and opens) a URL at notebook 00 rather than the Launcher,
and this lab's JupyterLab neither asks about nor fetches Jupyter news.

The server is started with the very arguments `make -n lab` prints, from this environment, with private Jupyter
directories and the settings override `make lab` installs (given here as ``app_settings_dir``, so nothing is
written into the environment)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 150.0  # JupyterLab took ~50 s to start on the loaded 2-core machine

pytestmark = pytest.mark.timeout(240)


def make_lab_arguments() -> list[str]:
    """The `jupyter lab` command line of `make lab`, without running anything (make -n)."""
    out = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if re.search(r"/jupyter lab\b", line))
    return shlex.split(line)[2:]


def test_make_lab_binds_loopback_and_starts_at_notebook_00():
    args = make_lab_arguments()
    assert "--ServerApp.ip=127.0.0.1" in args
    default = next(a for a in args if a.startswith("--LabApp.default_url="))
    notebook = default.split("=", 1)[1].removeprefix("/lab/tree/")
    assert (ROOT / notebook).is_file() and notebook.startswith("notebooks/00_")


def test_the_news_override_names_a_real_jupyterlab_setting():
    overrides = json.loads((ROOT / "labsettings" / "barrierlab.json").read_text())
    schemas = Path(sys.prefix, "share", "jupyter", "lab", "schemas")
    for plugin, values in overrides.items():
        package, _, name = plugin.partition(":")
        schema = json.loads((schemas / package / f"{name}.json").read_text())
        assert set(values) <= set(schema["properties"]), (plugin, sorted(schema["properties"]))
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


@pytest.mark.slow
def test_the_lab_prints_a_url_at_notebook_00_and_serves_news_off(tmp_path):
    settings = tmp_path / "app-settings"
    (settings / "overrides.d").mkdir(parents=True)
    shutil.copy(ROOT / "labsettings" / "barrierlab.json", settings / "overrides.d")
    env = {**os.environ, "JUPYTER_PLATFORM_DIRS": "1"}
    for name in ("CONFIG", "RUNTIME", "DATA"):
        env[f"JUPYTER_{name}_DIR"] = str(tmp_path / name.lower())
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp_path / "user-settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp_path / "workspaces")
    env.pop("JUPYTER_PATH", None)
    log = tmp_path / "lab.log"
    command = [sys.executable, "-m", "jupyterlab", *make_lab_arguments()]
    command += ["--no-browser", "--ServerApp.port=0", f"--LabApp.app_settings_dir={settings}"]
    with open(log, "wb") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        give_up = time.monotonic() + START_TIMEOUT
        url = None
        while url is None and time.monotonic() < give_up and server.poll() is None:
            url = re.search(r"http://127\.0\.0\.1:\d+/\S*token=\w+", log.read_text())
            time.sleep(0.5)
        assert url, f"no URL printed within {START_TIMEOUT:.0f} s:\n{log.read_text()[-2000:]}"
        printed = url.group(0)
        assert "/lab/tree/notebooks/00_what_is_a_barrier.ipynb?token=" in printed, printed
        with urllib.request.urlopen(printed, timeout=30) as page:
            assert page.status == 200
        base, token = printed.split("/lab/")[0], printed.rsplit("token=", 1)[1]
        request = urllib.request.Request(
            f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification",
            headers={"Authorization": f"token {token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            schema = json.load(response)["schema"]
        assert schema["properties"]["fetchNews"]["default"] == "false"
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
