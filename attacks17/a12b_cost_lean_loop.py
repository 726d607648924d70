"""a12b: the cost of recording a lean training loop: 2,000 steps of a small model (forward, backward, a gloo
all_reduce of the gradients), batches made in the rank, a log file kept open, and one small file read per step (a
sample index). The loop's CPU time in each rank with recording (the default) against
record=False, three runs each, best of each compared.
Promise 4: recording does not slow such a loop by more than ~20 %.
Exits 0 if the promise holds (at most 25 % slower), 1 if it breaks."""

import os
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import barrierlab as bl

STEPS = 2000
FILES_PER_STEP = 1


class Numbers(torch.utils.data.Dataset):
    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        return torch.full((16,), float(i % 7))


def loop(folder):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(torch.utils.data.DataLoader(Numbers(), batch_size=8, num_workers=0))
    log = open(os.path.join(folder, f"log{rank}.txt"), "a")  # noqa: SIM115 - kept open through the loop
    start = time.process_time()
    for step in range(STEPS):
        x = next(batches)
        for k in range(FILES_PER_STEP):
            with open(os.path.join(folder, f"meta{k}.txt")) as f:
                f.read()
        loss = model(x).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        opt.zero_grad()
        log.write(f"step {step} loss {loss.item():.4f}\n")
    spent = time.process_time() - start
    log.close()
    return spent


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a17-a12b-")
    try:
        for k in range(FILES_PER_STEP):
            with open(os.path.join(folder, f"meta{k}.txt"), "w") as f:
                f.write("x" * 200)
        best = {}
        for _ in range(3):
            for record in (False, True):
                run = bl.run(loop, 2, args=(folder,), timeout=60, deadline=280, live=False, record=record)
                if not run.ok:
                    print("the run itself failed:", run)
                    return 1
                print(f"record={record}: loop CPU seconds per rank {[round(v, 2) for v in run.values]}", flush=True)
                best[record] = min(best.get(record, float("inf")), max(run.values))
        ratio = best[True] / best[False]
        print(f"best CPU seconds: record=False {best[False]:.2f}, record=True {best[True]:.2f}: x{ratio:.2f}")
        if ratio > 1.25:
            print(f"BROKEN: recording made the loop {100 * (ratio - 1):.0f} % slower")
            return 1
        print("held")
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
