"""Promise (brief: the live view tells the truth) with subgroups: the live view's "waiting in barrier #N" numbers
one barrier differently on each rank, and unlike the ledger and the diagnosis.

Ranks 0,1 make 3 barriers on subgroup [0, 1], ranks 2,3 make 5 all_reduces on subgroup [2, 3], then rank 3
is late and ranks 0-2 wait in the same default-group barrier. The notebook live view (the HTML the kernel
displays, captured here by standing in for the display) says rank 0 and rank 1 are "waiting in barrier #6",
rank 2 "waiting in barrier #8": one barrier, two numbers, as if the ranks were at different barriers. The
number is the event's `seq` (the rank's count of all its collectives, on every group: live.describe), while the
ledger numbers the same barrier row 1 of the default group and the diagnosis calls it "call #3"."""

import re
import sys
import time

import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab import launch, live

SNAPSHOTS = []


def fn():
    r = dist.get_rank()
    a, b = dist.new_group([0, 1]), dist.new_group([2, 3])
    if r in (0, 1):
        for _ in range(3):
            dist.barrier(group=a)
    else:
        for _ in range(5):
            dist.all_reduce(torch.ones(1), group=b)
    if r == 3:
        time.sleep(2.5)  # late: the others wait in the next barrier meanwhile
    dist.barrier()


def main():
    launch.choose_view = lambda setting: "notebook"  # as in a JupyterLab kernel

    def show(self, now):  # stands in for IPython's display: keeps what the view would show
        SNAPSHOTS.append(live.render_html(self.states, now, self.deadline, self.where))
        self._shown = True

    live.LiveView._show = show
    live.LiveView._erase = lambda self: None
    run = bl.run(fn, world_size=4, timeout=10, deadline=20)
    said = {}
    for html in SNAPSHOTS:
        for rank, label in re.findall(r"rank (\d)</td>(?:(?!</tr>).)*?waiting in (barrier #\d+)", html):
            said.setdefault(int(rank), set()).add(label)
    print("the live view said, per rank:", {r: sorted(v) for r, v in sorted(said.items())})
    print(run.ledger().splitlines()[1])
    numbers = {label for r in (0, 1, 2) for label in said.get(r, ())}
    if not said:
        print("the view showed no barrier wait (run too short?)")
        return 1
    if len(numbers) > 1:
        print(f"BROKEN: one barrier is shown as {sorted(numbers)} on different ranks")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
