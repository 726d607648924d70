"""The diagnosis's headline on failures a pattern matcher may not expect: an exception raised inside a forward
hook on one rank, inside a Future.then callback on one rank, a rank that ends with os._exit(0) before a
collective, ranks that catch the timeout of a skipped barrier and go on, and two bugs at once (rank 2 raises
before any call while rank 1 skips a barrier). Promise (docs/reference.md, check=True / RankFailed): the headline
names the cause; the diagnosis names each rank's part. Held if each headline names the expected rank/line/op and,
for two bugs, the diagnosis names both."""

import os

import _common  # noqa: F401
import torch
import torch.distributed as dist

import barrierlab as bl


def hook_raises():
    r = dist.get_rank()
    m = torch.nn.Linear(2, 2)

    def hook(mod, inp, out):
        if r == 3:
            raise RuntimeError("NaN detected in activations")

    m.register_forward_hook(hook)
    for _ in range(3):
        dist.all_reduce(m(torch.ones(2)).detach())
    return r


def then_raises():
    r = dist.get_rank()

    def cb(fut):
        if r == 1:
            raise KeyError("metric missing on rank 1")
        return fut.value()

    dist.all_reduce(torch.ones(1), async_op=True).get_future().then(cb).wait()
    dist.barrier()
    return r


def os_exit_early():
    r = dist.get_rank()
    dist.barrier()
    if r == 3:
        os._exit(0)
    dist.all_reduce(torch.ones(1))
    return r


def catch_timeout():
    r = dist.get_rank()
    t = torch.ones(1)
    if r != 0:
        try:
            dist.barrier()
        except RuntimeError:
            pass
    dist.all_reduce(t)
    return t.item()


def two_bugs():
    r = dist.get_rank()
    if r == 2:
        raise ValueError("bad config on rank 2")
    if r != 1:
        dist.barrier()
    dist.all_reduce(torch.ones(1))
    return r


EXPECT = {  # words the headline must hold, and words the whole diagnosis must hold
    hook_raises: (["rank 3", "in hook", "NaN detected"], []),
    then_raises: (["rank 1", ".then(cb).wait()"], ["KeyError"]),
    os_exit_early: (["rank 3", "exited"], ["code 0"]),
    catch_timeout: (["all_reduce", "barrier", "rank 0"], []),
    two_bugs: ([], ["ValueError: bad config on rank 2", "barrier", "all_reduce"]),
}
missed = []
for fn, (head_words, all_words) in EXPECT.items():
    run = bl.run(fn, 4, timeout=2)
    text = str(run.diagnosis)
    head = run.diagnosis.headline
    lacking = [w for w in head_words if w not in head] + [w for w in all_words if w not in text]
    print(f"{'ok ' if not lacking else 'BAD'} {fn.__name__}: {run.statuses}\n    headline: {head}", flush=True)
    if lacking:
        print("    lacking:", lacking)
        missed.append(fn.__name__)
_common.finish(bool(missed), f"misdiagnosed: {missed}" if missed else "every headline names the cause")
