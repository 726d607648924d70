"""a07: a send to the wrong rank is diagnosed as "a collective reached by only some ranks", naming the barrier.

Promise 4: the diagnosis is right and names the learner's own (buggy) line. Rank 0 sends to rank 2 (it meant
rank 1), rank 1 receives from rank 0, then every rank calls barrier. Ranks 0 and 1 wait in send/recv until
the timeout; rank 2, which never receives, goes on to the barrier. The diagnosis says "ranks 0 and 1 never
did" call the barrier and advises looking for a rank-dependent `if` or an early return around a collective;
the send at line 7 and the recv at line 9 are never named. rule_unmatched_p2p (which would name them) comes
after rule_only_some_ranks in RULE_TABLE, so it is never reached.
"""

import sys

import torch
import torch.distributed as dist

import barrierlab as bl


def handoff():
    rank = dist.get_rank()
    t = torch.ones(2)
    if rank == 0:
        dist.send(t, dst=2)  # the bug: meant dst=1
    elif rank == 1:
        dist.recv(t, src=0)
    dist.barrier()


run = bl.run(handoff, 3, timeout=2, deadline=20)
text = str(run.diagnosis)
print(text)
send_line = handoff.__code__.co_firstlineno + 4
recv_line = send_line + 2
named = f":{send_line}" in text or f"line {send_line}" in text
if run.diagnosis.kind != "unmatched-p2p" and not named:
    print(
        f"BROKEN: diagnosis kind {run.diagnosis.kind!r}; the unmatched send (line {send_line}) and recv "
        f"(line {recv_line}) are not named, the barrier every rank's code reaches is blamed instead"
    )
    sys.exit(1)
print("held")
