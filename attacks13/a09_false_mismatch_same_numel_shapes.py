"""Promise 4: no false mismatch on correct code.

Rank 0 broadcasts a 2x3 parameter into the other ranks' flat buffers of 6 elements (same numel, same dtype; gloo
and NCCL move the bytes), or all-reduces a 2x3 tensor with a 6-element one. Every rank ends with the right values
(checked below), yet the diagnosis says "Ranks passed tensors of different sizes or dtypes to the same collective
...: nothing failed, but the results are wrong." Cause: diagnose._shape_mismatches compares each call's
(sizes, dtypes) as shapes (diagnose.py:408), not the element count and dtype the collective actually uses.
"""

import sys

import torch
import torch.distributed as dist

import barrierlab as bl


def broadcast_into_flat_buffer():
    t = torch.arange(6.0).reshape(2, 3) if dist.get_rank() == 0 else torch.empty(6)
    dist.broadcast(t, src=0)
    return t.flatten().tolist()


if __name__ == "__main__":
    run = bl.run(broadcast_into_flat_buffer, world_size=2, live=False)
    headline = run.diagnosis.headline
    print(run.values)
    print(headline)
    right = run.values == [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]] * 2
    if not right:
        print("unexpected values: the premise does not hold")
        sys.exit(0)
    if "results are wrong" in headline or "different sizes" in headline:
        print("BROKEN: every rank got the right values, but the diagnosis says the results are wrong")
        sys.exit(1)
    print("held")
