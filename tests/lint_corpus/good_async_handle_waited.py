# The fix of bad_async_handle_dropped.py: every async call's handle is kept and waited for before its tensor
# is read (here the handles of several buckets, waited together, as DDP's communication hooks do). Written here.
# expect: none
import torch
import torch.distributed as dist


def all_reduce_and_rescale(grads, rescale):
    flat = torch.cat([g.view(-1) for g in grads])
    flat.div_(rescale)
    work = dist.all_reduce(flat, async_op=True)
    work.wait()
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset : offset + n].view_as(g))
        offset += n


def bucketed(buckets):
    handles = [dist.all_reduce(b, async_op=True) for b in buckets]
    pending = []
    for b in buckets:
        pending.append(dist.broadcast(b, src=0, async_op=True))
    for h in handles + pending:
        h.wait()
    return buckets
