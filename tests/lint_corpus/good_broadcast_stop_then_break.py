# The recommended fix for rank-local early stopping: rank 0 decides, the decision is broadcast, and every
# rank breaks on the broadcast value (ultralytics/yolov5 PR #8345). After the broadcast `stop` is the same
# everywhere, so the break and the all_reduce after it are balanced.
# expect: none
import torch
import torch.distributed as dist


def train(model, stopper, epochs):
    rank = dist.get_rank()
    stop = False
    for epoch in range(epochs):
        loss = model.step()
        if rank == 0:
            stop = stopper(epoch, loss)
        box = [stop if rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        stop = box[0]
        if stop:
            break
        dist.all_reduce(torch.tensor([loss]))


def train_with_a_flag(model, epochs):
    for epoch in range(epochs):
        flag = torch.tensor([1.0 if model.local_loss() < 0.1 and dist.get_rank() == 0 else 0.0])
        dist.all_reduce(flag)
        if flag.item() > 0:
            break
        dist.barrier()
