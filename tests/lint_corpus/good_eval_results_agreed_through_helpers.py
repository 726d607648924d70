# Evaluation over an unpadded sampler (each rank its own number of batches, no collective in the loop), then
# one all_gather_object, two helpers deep, whose merged result every rank checks and raises on alike: the
# helpers return what the gather made equal (sorted and summed from it), so the check is the same on every
# rank and nobody leaves early. Modelled on tests/realworld/round11's eval-sampler pair (DeepDeblur's
# DistributedEvalSampler, issue #44), which lint flagged before it followed agreement through helpers.
# Written here.
# expect: none
import torch.distributed as dist


def gather_results(local):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, local)
    return out


def finish(pairs, loss_sum, count):
    everyone = gather_results({"pairs": pairs, "loss_sum": loss_sum, "count": count})
    merged = sorted(p for part in everyone for p in part["pairs"])
    loss = sum(part["loss_sum"] for part in everyone) / sum(part["count"] for part in everyone)
    return merged, loss


def evaluate(model, batches):
    pairs, loss_sum, count = [], 0.0, 0
    for idx, x in batches:
        out = model(x)
        loss_sum += float(out.sum())
        count += len(idx)
        pairs.extend(zip(idx.tolist(), out.argmax(dim=1).tolist()))
    return finish(pairs, loss_sum, count)


def worker(model, dataset, num_samples):
    rank, world = dist.get_rank(), dist.get_world_size()
    batches = [dataset[i : i + 3] for i in range(rank * 3, num_samples, world * 3)]
    merged, loss = evaluate(model, batches)
    ids = [i for i, _ in merged]
    if ids != list(range(num_samples)):
        raise RuntimeError(f"samples evaluated: {ids}")
    dist.barrier()
    return loss
