"""Shared by a04, a05, a06. Promise: the diagnosis's advice fits the program. Three learner programs that deadlock for good (under
torchrun each hangs until torch's 30-minute timeout or forever; checked by hand, see README):
  p08  a dist.barrier() inside Dataset.__getitem__, loaded with num_workers=1 (the worker process waits in it);
  p09  torch.multiprocessing.spawn of the DDP tutorial's demo_basic inside each launched rank;
  p11  each rank builds only the subgroup it belongs to (pytorch/pytorch#130102), then barriers on it.
The diagnosis advises 'The function ran longer than the deadline; raise `deadline`'. Checked: with a deadline
3x longer the same ranks are stuck at the same lines, so that advice cannot help. For p08 also: the diagnosis
says 'outside any collective' while the DataLoader worker is inside dist.barrier() (a marker file says so)."""

import os
import re

from _h import LEARNER, Workdir, cli, verdict


def check(prog):
    broken = []
    if True:
        stuck = {}
        advice = ""
        for deadline in ("6", "18"):
            with Workdir() as wd:
                src = (LEARNER / prog).read_text()
                if prog.startswith("p08"):  # the same program, plus a marker of where the worker is
                    src = src.replace(
                        "        dist.barrier()\n        return",
                        "        open(f'in_barrier_{os.getpid()}', 'w').close()\n        dist.barrier()\n        open(f'left_barrier_{os.getpid()}', 'w').close()\n        return",
                    ).replace("import torch\n", "import os\nimport torch\n", 1)
                path = os.path.join(wd, prog)
                with open(path, "w") as f:
                    f.write(src)
                rc, out, err = cli(path, timeout=3, extra=("--deadline", deadline), cwd=wd, wall=60)
                markers = sorted(
                    n.split("_")[0] for n in os.listdir(wd) if n.startswith(("in_barrier", "left_barrier"))
                )
            text = out + err
            st = sorted(set(re.findall(r"rank (\d+): stopped at deadline, stuck (?:in \S+ )?at [^\n]*?:(\d+)", text)))
            stuck[deadline] = st
            advice = next((ln for ln in text.splitlines() if ln.startswith("What to do:")), "")
            head = next((ln for ln in text.splitlines() if "did not finish before the deadline" in ln), "")
            print(
                f"[{prog} --deadline {deadline}] rc={rc} stuck(rank, line)={st}\n  headline: {head[:200]}\n  {advice}"
            )
            if prog.startswith("p08"):
                print(f"  worker markers: {markers}")
                if "in" in markers and "left" not in markers and "outside any collective" in head:
                    broken.append(
                        f"{prog}: workers entered dist.barrier() and never left it; the headline says 'outside any collective'"
                    )
        if stuck["6"] and stuck["6"] == stuck["18"] and "raise `deadline`" in advice:
            broken.append(
                f"{prog}: stuck at the same places with deadline 6 s and 18 s {stuck['18']}, yet the advice is '{advice[13:80]}...'"
            )
    verdict(list(dict.fromkeys(broken)))
