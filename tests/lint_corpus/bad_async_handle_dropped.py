# Gradients flattened into one buffer, all-reduced with async_op=True, and copied back at once: the Work
# handle is dropped, so the copy reads the buffer while the backend is still writing it, and the replicas
# drift apart (OpenNMT-py's all_reduce_and_rescale_tensors, issue #2295). Also a metric summed
# asynchronously and printed. Written here.
# expect: 14 unwaited-async dist.all_reduce
# expect: 24 unwaited-async dist.all_reduce
import torch
import torch.distributed as dist


def all_reduce_and_rescale(grads, rescale):
    flat = torch.cat([g.view(-1) for g in grads])
    flat.div_(rescale)
    dist.all_reduce(flat, async_op=True)
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset : offset + n].view_as(g))
        offset += n


def report(loss):
    total = loss.detach().clone()
    dist.all_reduce(total, async_op=True)
    print(f"mean loss {total.item() / dist.get_world_size():.4f}")
