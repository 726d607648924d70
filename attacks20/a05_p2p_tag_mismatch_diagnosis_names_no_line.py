"""Promise 4 (the diagnosis names the learner's own line): a send and a recv whose tags differ hang.

Rank 0 sends with tag=1, rank 1 receives with tag=2: gloo never matches them and both time out. The
diagnosis says "every rank made the same collective calls" and names neither the send's nor the recv's line
(a cycle of two sends, by contrast, is named with both lines). barrierlab does not record tags
(events.PEER_ARGUMENTS has src/dst/group_src/group_dst only)."""

import inspect
import sys

import torch
import torch.distributed as dist

import barrierlab as bl


def mismatched_tags():
    x = torch.zeros(1)
    if dist.get_rank() == 0:
        dist.send(x, dst=1, tag=1)
    else:
        dist.recv(x, src=0, tag=2)


def main():
    lines, first = inspect.getsourcelines(mismatched_tags)
    send_line = first + next(i for i, t in enumerate(lines) if "dist.send" in t)
    recv_line = first + next(i for i, t in enumerate(lines) if "dist.recv" in t)
    run = bl.run(mismatched_tags, world_size=2, timeout=2, deadline=6, live=False)
    text = str(run.diagnosis)
    print(text)
    named = [n for n in (send_line, recv_line) if f":{n}" in text or f"line {n}" in text]
    if not named:
        print(f"\nBROKEN: the diagnosis names neither the send (line {send_line}) nor the recv (line {recv_line})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
