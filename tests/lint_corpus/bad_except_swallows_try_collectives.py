# A `try` that holds a rank's own work and the collectives after it, with a handler that logs and goes on: a
# rank whose own data makes the work raise jumps past the collectives the other ranks make. Models the task
# loop of EvolvingLMMs-Lab/lmms-eval lmms_eval/__main__.py (cli_evaluate: one `try` per task, `except
# Exception: ... results_list.append(None)`, a wait for every process after a task that succeeded; the hang
# described in lmms-eval PR #1304) and an out-of-memory skip around a step whose metrics are all-reduced,
# written here.
# expect: 28 hidden-collective gather -> dist.all_gather_object
# expect: 30 except-path dist.barrier
# expect: 41 except-path dist.all_reduce
import torch
import torch.distributed as dist


def gather(rows):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, rows)
    return [r for part in out for r in part]


def score(doc):
    return float(doc["answer"].strip() == doc["response"])


def evaluate(tasks):
    results = []
    for task in tasks:
        try:
            scores = gather([score(d) for d in task])
            results.append(sum(scores) / len(scores))
            dist.barrier()
        except Exception as exc:
            print("task failed:", exc)
            results.append(None)
    return results


def step(model, batch, optimizer):
    try:
        loss = model(batch).sum()
        loss.backward()
        dist.all_reduce(loss.detach())
        optimizer.step()
    except torch.cuda.OutOfMemoryError:
        optimizer.zero_grad()
