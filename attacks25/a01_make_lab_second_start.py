"""Promise (README 'On your machine'): `make lab` sets up .venv the first time, then opens JupyterLab at notebook
00, printing its URL; it serves on 127.0.0.1 only; Ctrl-C stops it. The first time (a fresh HOME, a fresh
`git clone /work/main`, `make lab`) was run by hand for attack25 (README: 113 s of setup, then the lab); this
script checks the next start of that clone (A25_CLONE, default /tmp/a25fresh/clone, made by
`git clone /work/main /tmp/a25fresh/clone && cd /tmp/a25fresh/clone && HOME=<new> make lab`): no setup step
runs again, the URL is printed within 60 s, it points at notebook 00 on 127.0.0.1, every socket the server
listens on is on 127.0.0.1, the notebooks are served (REST API with the printed token), a kernel starts (with
barrierlab's warm process) and stops, and two Ctrl-C leave no process of the lab."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

clone = os.environ.get("A25_CLONE", "/tmp/a25fresh/clone")
if not os.path.exists(os.path.join(clone, ".venv", ".installed")):
    print(f"not run: {clone} has no set-up .venv (see the docstring)")
    sys.exit(2)
home = tempfile.mkdtemp(prefix="a25-home-")
env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
env["HOME"] = home
log = tempfile.TemporaryFile(mode="w+")
t0 = time.monotonic()
p = subprocess.Popen(["make", "lab"], cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
broken, url = [], None


def text():
    log.seek(0)
    return log.read()


def descendants(pid):
    out = subprocess.run(["ps", "-eo", "pid,ppid"], capture_output=True, text=True).stdout.split("\n")[1:]
    kids = {}
    for line in out:
        if line.strip():
            a, b = map(int, line.split())
            kids.setdefault(b, []).append(a)
    seen, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            seen.append(k)
            todo.append(k)
    return seen


try:
    while time.monotonic() - t0 < 60 and url is None:
        m = re.search(r"(http://[^\s]+/lab/tree/[^\s?]+\?token=\w+)", text())
        url = m.group(1) if m else None
        time.sleep(0.3)
    took = time.monotonic() - t0
    out = text()
    print(f"URL after {took:.1f} s: {url}")
    if "pip install" in out or "install_torch" in out:
        broken.append("setup ran again on the second start")
    if not url:
        broken.append("no URL within 60 s")
    else:
        if not url.startswith("http://127.0.0.1:") or "notebooks/00_what_is_a_barrier.ipynb" not in url:
            broken.append(f"URL is not notebook 00 on 127.0.0.1: {url}")
        base, token = url.split("/lab/")[0], url.split("token=")[1]
        pids = [p.pid, *descendants(p.pid)]
        ss = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
        mine = [ln.split()[3] for ln in ss.splitlines() if any(f"pid={q}," in ln for q in pids)]
        print("listening:", mine)
        if not mine or any(not a.startswith("127.0.0.1:") for a in mine):
            broken.append(f"listens on {mine}")
        hdr = {"Authorization": f"token {token}"}
        req = urllib.request.Request(f"{base}/api/contents/notebooks", headers=hdr)
        names = sorted(x["name"] for x in json.load(urllib.request.urlopen(req, timeout=10))["content"])
        nbs = [n for n in names if n.endswith(".ipynb")]
        print("notebooks served:", nbs)
        if len(nbs) != 9:
            broken.append(f"{len(nbs)} notebooks served, the README lists 9")
        req = urllib.request.Request(f"{base}/api/kernels", data=b'{"name": "python3"}', headers=hdr, method="POST")
        kid = json.load(urllib.request.urlopen(req, timeout=30))["id"]
        warm = False
        for _ in range(60):
            cmds = [
                open(f"/proc/{q}/cmdline", "rb").read().replace(b"\0", b" ")
                for q in descendants(p.pid)
                if os.path.exists(f"/proc/{q}/cmdline")
            ]
            warm = any(b"barrierlab._warm" in c for c in cmds)
            if warm:
                break
            time.sleep(0.5)
        print("kernel's warm process started:", warm)
        if not warm:
            broken.append("a kernel of the lab did not start barrierlab's warm process within 30 s")
        urllib.request.urlopen(
            urllib.request.Request(f"{base}/api/kernels/{kid}", headers=hdr, method="DELETE"), timeout=30
        )
finally:
    jup = [q for q in descendants(p.pid)]
    for _ in range(2):  # Ctrl-C twice, as the server says, to the lab's processes
        for q in jup:
            try:
                os.kill(q, signal.SIGINT)
            except ProcessLookupError:
                pass
        time.sleep(1)
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        broken.append("make lab still running 20 s after two Ctrl-C")
    left = descendants(p.pid) + [q for q in jup if os.path.exists(f"/proc/{q}")]
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if left:
        broken.append(f"processes left after Ctrl-C: {left}")
    subprocess.run(["rm", "-rf", home])
print(f"total {time.monotonic() - t0:.1f} s")
if broken:
    print("BROKEN:\n - " + "\n - ".join(broken))
    sys.exit(1)
print("HELD")
