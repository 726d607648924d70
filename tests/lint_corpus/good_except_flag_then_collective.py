# The fix of bad_except_swallows_try_collectives.py: the `try` holds only the rank's own work, a failure
# becomes a flag, and every rank agrees on the flag before the collectives; a `try` that re-raises, one that
# starts with its collective, and one that catches only the end of an iterator stay quiet.
# expect: none
import torch
import torch.distributed as dist


def score(doc):
    return float(doc["answer"].strip() == doc["response"])


def evaluate(tasks):
    results = []
    for task in tasks:
        failed = 0
        try:
            scores = [score(d) for d in task]
        except Exception as exc:
            print("task failed:", exc)
            failed = 1
            scores = []
        flag = torch.tensor([failed])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        out = [None] * dist.get_world_size()
        dist.all_gather_object(out, None if flag.item() else scores)
        results.append(None if flag.item() else out)
    return results


def step(model, batch, optimizer):
    try:
        loss = model(batch).sum()
        dist.all_reduce(loss.detach())
        optimizer.step()
    except RuntimeError as exc:
        print("step failed on this rank:", exc)
        raise


def agree(flag):
    try:
        dist.all_reduce(flag)
        print("agreed", flag.item())
    except RuntimeError:
        print("the group failed")
    return flag


def drain(it):
    while True:
        try:
            batch = next(it)
            dist.all_reduce(batch)
        except StopIteration:
            break


def get_all_reduce_mean(tensor):
    dist.all_reduce(tensor)
    return tensor / dist.get_world_size()


def evaluation_loss(losses):
    # DeepSpeed-Chat's evaluation (applications/DeepSpeed-Chat/training/step1_supervised_finetuning/main.py):
    # the helper starts with its all_reduce, so nothing of the rank's own can raise before it (attack24 a10)
    try:
        losses = get_all_reduce_mean(losses)
    except Exception:
        pass
    return losses
