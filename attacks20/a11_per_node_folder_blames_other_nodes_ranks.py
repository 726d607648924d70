"""Promise 4 (no false mismatch; the diagnosis names the learner's own line), under torchrun on two nodes
with the default record folders (one private folder per machine, docs/torchrun.md).

Two torchrun agents on this machine stand for two nodes (--nnodes=2 --node-rank=0/1, 2 ranks each; node 1
holds ranks 2 and 3). Every rank makes a barrier and an all_reduce; then rank 3 raises ValueError (line 12 of
the module) and the others fail in the next barrier. Each node's failing rank prints "the diagnosis of the
ranks recorded in" its folder, which holds its own node's ranks only: node 1's says "A collective reached by
only some ranks: ranks 2 and 3 called barrier #1 ...; ranks 0 and 1 never did", and node 0's the same of
ranks 2 and 3. Every rank made barrier #1; the ranks of the other node are only not recorded in that folder
(collect.from_records counts them as ranks that ended without a report and made no call), and rank 3's
ValueError is named in neither headline."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

MODULE = """\
import os, time
import torch, torch.distributed as dist
from barrierlab.torchrun import main as torchrun_main


def scenario():
    dist.barrier()
    dist.all_reduce(torch.ones(1))
    if dist.get_rank() == 3:
        time.sleep(0.3)
        raise ValueError("rank 3 fails")
    dist.barrier()


torchrun_main(scenario)
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    top = tempfile.mkdtemp()
    outputs = []
    try:
        with open(os.path.join(top, "job.py"), "w") as f:
            f.write(MODULE)
        env = {**os.environ, "PYTHONPATH": SRC, "BARRIERLAB_TIMEOUT": "5"}
        env.pop("BARRIERLAB_RECORD_DIR", None)
        port = str(_free_port())
        procs = []
        for node in ("0", "1"):
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", f"--node-rank={node}"]
            cmd += ["--nproc-per-node=2", "--master-addr=127.0.0.1", f"--master-port={port}", "--tee=3", "job.py"]
            procs.append(
                subprocess.Popen(
                    cmd, cwd=top, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                    start_new_session=True,
                )
            )  # fmt: skip
        for proc in procs:
            try:
                outputs.append(proc.communicate(timeout=150)[0])
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the session made for it
                outputs.append(proc.communicate()[0])
    finally:
        shutil.rmtree(top, ignore_errors=True)
        for out in outputs:  # the per-node record folders torchrun's ranks made
            for folder in set(re.findall(r"/tmp/barrierlab-torchrun-[A-Za-z0-9_]+", out)):
                shutil.rmtree(folder, ignore_errors=True)
    broken = False
    for node, out in enumerate(outputs):
        lines = [re.sub(r"^\[default\d\]:", "", line) for line in out.splitlines()]
        try:
            at = next(i for i, line in enumerate(lines) if "diagnosis of the ranks recorded in" in line)
        except StopIteration:
            print(f"node {node}: no diagnosis printed")
            continue
        headline = lines[at + 1]
        print(f"node {node}'s diagnosis: {headline}")
        others = "ranks 0 and 1 never did" if node == 1 else "ranks 2 and 3 never did"
        if others in headline:
            broken = True
    if broken:
        print("BROKEN: a node's diagnosis says the other node's ranks never called barrier #1, which they did")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
