"""Promise 3: a script that passes under torchrun passes under `barrierlab run`.

`echo '{"lr": 0.1}' | torchrun --nproc-per-node 2 train.py`: the workers inherit torchrun's stdin, so rank 0 can
read a config from it and broadcast it (checked by hand: torchrun's rank 0 reads 'hello' from a pipe). Under
`echo ... | barrierlab run train.py -n 2` every rank's stdin is /dev/null (_rank.py dup2s /dev/null onto fd 0 in each
rank; the warm process's fd 0 is /dev/null too, _warm.py:552), rank 0 reads '' and the script fails. Nothing in the docs says stdin is not passed.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import SRC, TempDir  # noqa: E402

SCRIPT = r"""
import json, sys
import torch.distributed as dist
dist.init_process_group("gloo")
config = [json.loads(sys.stdin.read()) if dist.get_rank() == 0 else None]
dist.broadcast_object_list(config, src=0)
print("config", config[0])
dist.destroy_process_group()
"""

with TempDir() as d:
    script = os.path.join(d, "train.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    env = {**os.environ, "PYTHONPATH": SRC, "BARRIERLAB_LIVE": "0"}
    p = subprocess.run(
        [sys.executable, "-m", "barrierlab", "run", script, "-n", "2"],
        input='{"lr": 0.1}\n',
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    print(f"exit {p.returncode}")
    print(p.stdout[:700])
    if p.returncode == 0 and "config {'lr': 0.1}" in p.stdout:
        print("held")
        sys.exit(0)
    print("BROKEN: rank 0 could not read the config piped to the command's stdin")
    sys.exit(1)
