"""The live view in a real JupyterLab (headless Chromium via Playwright): does what the page shows match the run's
record (ranks, statuses), does it go away when the run ends, is everything the kernel's processes listen on bound to
127.0.0.1, and what happens with 16 ranks, a rank that never starts its function, and a run that is interrupted?

Playwright comes from a venv of this worktree (../.pwvenv, `pip install playwright==1.65.2`), the lab and kernel from
sys.executable's environment with PYTHONPATH=<tree>/src, the server helpers from tests/browser/test_lab_in_browser.py.
"""

import glob
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
for sp in glob.glob(str(TREE / ".pwvenv" / "lib" / "python3*" / "site-packages")):
    sys.path.append(sp)
os.environ["PYTHONPATH"] = str(TREE / "src")
sys.path.insert(0, str(TREE / "src"))
sys.path.insert(0, str(TREE / "tests" / "browser"))

import nbformat  # noqa: E402
import psutil  # noqa: E402
import test_lab_in_browser as T  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

CELLS = [
    # 0
    "import os, time, json\nimport torch.distributed as dist\nimport barrierlab as bl\n"
    "def record(run):\n"
    "    print('RECORD', json.dumps({'statuses': [str(s) for s in run.statuses], 'headline': run.headline()}))\n",
    # 1: 16 ranks, rank 15 raises after a second, the others wait in a barrier
    "def sixteen():\n"
    "    r = dist.get_rank()\n"
    "    if r == 15:\n"
    "        time.sleep(1.5)\n"
    "        raise ValueError('rank 15 gives up')\n"
    "    dist.barrier()\n"
    "    return r\n"
    "run16 = bl.run(sixteen, 16, timeout=4, deadline=8)\n"
    "record(run16)",
    # 2: a rank that never starts its function: unpickling its argument hangs on rank 3
    "def _stall():\n"
    "    import os, time\n"
    "    if os.environ.get('RANK') == '3':\n"
    "        time.sleep(60)\n"
    "    return 'arg'\n"
    "class Stall:\n"
    "    def __reduce__(self):\n"
    "        return (_stall, ())\n"
    "def quick(arg):\n"
    "    dist.barrier()\n"
    "    return dist.get_rank()\n"
    "run_ns = bl.run(quick, 4, args=(Stall(),), timeout=3, deadline=4)\n"
    "record(run_ns)\n"
    "print('STUCK', run_ns.stuck)",
    # 3: interrupted: a deadlock with a long deadline, interrupted from the menu
    "def deadlock():\n"
    "    if dist.get_rank() == 0:\n"
    "        dist.barrier()\n"
    "    time.sleep(30)\n"
    "run_int = bl.run(deadlock, 4, timeout=40, deadline=45)",
]

OUT_JS = """(index) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const cell = panel && panel.querySelectorAll('.jp-Notebook .jp-CodeCell')[index];
  const out = cell && cell.querySelector('.jp-OutputArea');
  return out ? out.innerText : '';
}"""


def rows(text):
    """{rank: description} from a live view's text."""
    found = {}
    for line in text.splitlines():
        m = re.match(r"\s*rank (\d+)\s+(.*)$", line)
        if m:
            found[int(m.group(1))] = m.group(2).strip()
    return found


def listening(lab):
    bad = []
    for p in lab.descendants() + [psutil.Process(lab.process.pid)]:
        try:
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN and c.laddr.ip not in ("127.0.0.1", "::1"):
                    bad.append((p.pid, p.name(), c.laddr))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return bad


def main():
    problems = []
    home = Path(tempfile.mkdtemp(prefix="a26-lab-"))
    root = home / "root"
    (root / "live").mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, root / "live" / "a26.ipynb")
    path = "live/a26.ipynb"
    chromium = T.find_chromium()
    try:
        with T.running_lab(home, root) as lab, sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                str(home / "profile"),
                executable_path=chromium,
                headless=True,
                args=T.CHROMIUM_ARGS,
                viewport={"width": 1400, "height": 1000},
            )
            try:
                page = T.open_notebook(ctx, lab, path)
                T.menu(page, "Run", "Run All Cells")
                snaps = {1: [], 2: [], 3: []}
                sockets = []
                interrupted_at = None
                give_up = time.monotonic() + 90
                while time.monotonic() < give_up:
                    for i in (1, 2, 3):
                        t = page.evaluate(OUT_JS, i)
                        if "deadline in" in t and (not snaps[i] or snaps[i][-1] != t):
                            snaps[i].append(t)
                    if snaps[1] and len(snaps[1]) == 2:
                        sockets = listening(lab)
                    if snaps[3] and interrupted_at is None and len(snaps[3]) >= 3:
                        T.menu(page, "Kernel", "Interrupt Kernel")
                        interrupted_at = time.monotonic()
                    if interrupted_at and time.monotonic() - interrupted_at > 4:
                        break
                    time.sleep(0.2)
                finals = {i: page.evaluate(OUT_JS, i) for i in (1, 2, 3)}
                page.screenshot(path=str(home / "after.png"))
                # ranks of the interrupted run still alive 4 s after the interrupt
                alive = [p for p in lab.descendants() if p.name().startswith("blrun")]
                alive_desc = [(p.pid, p.name()) for p in alive]
                kernels = lab.api("GET", "/api/kernels")
                for k in kernels:
                    lab.api("DELETE", f"/api/kernels/{k['id']}")
                page.close()
            finally:
                ctx.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)

    def record_of(text):
        m = re.search(r"RECORD (\{.*\})", text)
        return json.loads(m.group(1)) if m else None

    # 16 ranks
    rec16 = record_of(finals[1])
    print("16 ranks: live snapshots", len(snaps[1]), "| record:", rec16)
    if snaps[1]:
        last = rows(snaps[1][-1])
        print("  last live view:", json.dumps(last)[:900])
        if sorted(last) != list(range(16)):
            problems.append(f"16 ranks: the live view listed ranks {sorted(last)}")
        head = snaps[1][-1].splitlines()[0]
        if "16 ranks" not in head:
            problems.append(f"16 ranks: header {head!r}")
        if rec16:
            for r, desc in last.items():
                st = rec16["statuses"][r]
                if desc in ("finished",) and st != "finished" or desc.startswith("raised") and st != "raised":
                    problems.append(f"16 ranks: live said rank {r} {desc!r}, record says {st}")
    else:
        problems.append("16 ranks: no live view seen")
    if "deadline in" in finals[1]:
        problems.append("16 ranks: live lines left under the cell after the run")
    if sockets:
        problems.append(f"listening beyond loopback: {sockets}")
    print("  listening sockets beyond loopback during the run:", sockets)

    # never-starting rank
    rec_ns = record_of(finals[2])
    print("never-starting rank 3: live snapshots", len(snaps[2]), "| record:", rec_ns)
    stuck = re.search(r"STUCK (.*)", finals[2], re.S)
    print("  run.stuck:", (stuck.group(1)[:600] if stuck else None))
    for s in snaps[2][-2:]:
        print("  live:", json.dumps(rows(s)))
    if snaps[2]:
        last = rows(snaps[2][-1])
        if "running your code" in last.get(3, ""):  # its __reduce__ is code of the learner's: not counted
            print(f"  (note: live says rank 3 {last.get(3)!r}: it is unpickling its argument, code of the learner's)")
        claims = [r for r in (0, 1, 2) if "running your code" in last.get(r, "")]
        if claims:
            problems.append(
                f"never-starting rank: live says ranks {claims} are 'running your code' while they wait in "
                "barrierlab's start-up for rank 3 (their function had not started)"
            )
    if "deadline in" in finals[2]:
        problems.append("never-starting rank: live lines left under the cell")

    # interrupted
    print("interrupted: live snapshots", len(snaps[3]), "| interrupted:", interrupted_at is not None)
    print("  output after the interrupt:", finals[3][-400:].replace("\n", " | "))
    print("  ranks (blrun*) alive 4 s after the interrupt:", alive_desc)
    if interrupted_at is None:
        problems.append("interrupted: the live view never appeared, so it was not interrupted")
    else:
        if "deadline in" in finals[3]:
            problems.append("interrupted: the live view stayed under the cell after the interrupt")
        if "KeyboardInterrupt" not in finals[3]:
            problems.append("interrupted: no KeyboardInterrupt shown")
        if alive:
            problems.append(f"interrupted: ranks still alive 4 s later: {alive_desc}")

    for p in problems:
        print("BROKEN:", p)
    print("BROKEN" if problems else "HELD")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
