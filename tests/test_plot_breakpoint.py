"""The timeline's right edge on a run where torch's own Python code made a collective the recorder saw:
``dist.breakpoint()``'s barrier (notebook 07 §5). Its wait is recorded, so the edge must not say that waits in
torch's collectives were not recorded (review15b), nor count it among "your calls". The rank function lives
here, in a module with no heavy imports (the ranks import it)."""

from __future__ import annotations

import os

import torch.distributed as dist

import barrierlab as bl


def pause_at_a_breakpoint():
    if dist.get_rank() == 0:  # as if someone typed "c" into rank 0's terminal
        read_end, write_end = os.pipe()
        os.write(write_end, b"c\n")
        os.close(write_end)
        os.dup2(read_end, 0)
    dist.breakpoint(rank=0)
    return dist.get_rank()


def test_the_wait_in_dist_breakpoints_barrier_is_not_called_unrecorded():
    from barrierlab import plot

    run = bl.run(pause_at_a_breakpoint, 2, timeout=5)
    assert run.ok, run
    fig = plot.timeline(run)
    (right,) = fig.axes[0].child_axes  # the right edge's notes, one per rank
    notes = [t.get_text() for t in right.get_yticklabels()]
    assert len(notes) == 2 and all(note.startswith("waited") for note in notes), notes
    assert not any("not recorded" in note or "your calls" in note for note in notes), notes
