"""attack22 a07: a receive too small for what was sent, through irecv().wait() and batch_isend_irecv.

Promise (docs/reference.md, README): the diagnosis headline says what happened, naming the learner's line. Rank 0
sends 2 floats, rank 1 receives into a 1-float tensor; gloo aborts rank 1 (SIGABRT: "8 vs 4"). With a blocking
dist.recv the headline names the recv and gives recv advice. With the asynchronous forms pipeline code uses --
dist.irecv(...).wait() and batch_isend_irecv(...) then wait() -- the abort happens inside Work.wait(), and the
headline says "in a collective ... the ranks passed tensors of different sizes", with advice about DDP's
construction-time broadcast of parameters and buffers, none of which applies; and it names the line as
"<dynamic-code>:N" instead of this file. Exit 0 if every headline speaks of the point-to-point call and this file.
"""

import sys

import torch
import torch.distributed as dist
from _h import verdict

import barrierlab as bl  # noqa: F401  (from the tree via _h)


def blocking():
    if dist.get_rank() == 0:
        dist.send(torch.ones(2), 1)
    else:
        dist.recv(torch.zeros(1), 0)


def irecv_wait():
    if dist.get_rank() == 0:
        dist.send(torch.ones(2), 1)
    else:
        dist.irecv(torch.zeros(1), 0).wait()


def batched():
    if dist.get_rank() == 0:
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.ones(2), 1)])
    else:
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, torch.zeros(1), 0)])
    for req in reqs:
        req.wait()


def main():
    wrong = []
    for fn in (blocking, irecv_wait, batched):
        run = bl.run(fn, 2, timeout=3, deadline=10)
        d = run.diagnosis
        print(f"== {fn.__name__}: {run.statuses}")
        print("   headline:", d.headline)
        advice = str(d).splitlines()[-1]
        print("   advice:", advice[:160])
        problems = []
        if "in a collective" in d.headline or "ranks passed tensors of different sizes" in d.headline:
            problems.append("calls the receive a collective")
        if "DDP" in advice:
            problems.append("gives DDP advice")
        if "<dynamic-code>" in d.headline:
            problems.append("names <dynamic-code>, not this file")
        if problems:
            wrong.append(f"{fn.__name__}: " + ", ".join(problems))
    if any(w.startswith("blocking") for w in wrong):
        print("(the blocking control is wrong too)")
    verdict(bool(wrong), "; ".join(wrong) or "every headline names the point-to-point receive")


if __name__ == "__main__":
    sys.exit(main())
