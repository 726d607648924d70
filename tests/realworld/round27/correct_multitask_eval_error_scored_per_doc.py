"""An lmms-eval style evaluation of several tasks in one launch whose per-document scoring catches the exception of
a malformed document on the rank that holds it, scores it as a miss and goes on to the gather with the others.

Models: EvolvingLMMs-Lab/lmms-eval ``lmms_eval/__main__.py`` ``cli_evaluate`` (the per-task ``try`` /
``results_list.append(None)`` loop, kept here) and ``lmms_eval/evaluator.py`` (documents ``rank::world_size``,
``process_results``, the gather of the results); lmms-eval PR #1304 (a per-rank exception must not leave the other
ranks in a collective); the per-sample error records of lm-evaluation-harness / lighteval-style evaluators.

What it does: 2 ranks evaluate a tiny "model" (a linear layer used as a calculator) on two tasks from
``_helpers_tasks`` (``sum_qa``, ``parity_qa``). Document 3 of ``sum_qa`` (on rank 1) has no reference answer;
``process_results`` raises there, the rank records ``{"exact_match": 0.0, "error": ...}`` for it and carries on.
The per-document results are all-gathered, every rank waits for the others, rank 0 prints the table (with the
error count).

Why it is right although it looks rank-dependent: the exception is caught on one rank only, in the loop that
feeds the gather -- but inside the document loop, so every rank still reaches the task's gather and wait; the
outer per-task ``except`` is never reached.
"""

import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

from _helpers_tasks import TASKS, gather_results, process_results

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


def generate(model, task, doc):
    with torch.no_grad():
        if TASKS[task]["kind"] == "sum":
            x = torch.tensor([doc["question"]], dtype=torch.float32)
            return str(int(round(model(x).item())))
        return "even" if doc["question"][0] % 2 == 0 else "odd"


def evaluate_task(model, task):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    results = []
    for doc in TASKS[task]["docs"][rank::world_size]:
        response = generate(model, task, doc)
        try:
            results.append(process_results(doc, response))
        except Exception as e:
            print(f"[rank {rank}] {task} doc {doc['doc_id']}: {e!r}; scored as a miss", flush=True)
            results.append({"doc_id": doc["doc_id"], "exact_match": 0.0, "error": repr(e)})
    results = gather_results(results)
    errors = sum("error" in r for r in results)
    return {"task": task, "n": len(results), "errors": errors,
            "exact_match": sum(r["exact_match"] for r in results) / len(results)}


def cli_evaluate(model, task_list):
    results_list = []
    for task in task_list:
        try:
            results = evaluate_task(model, task)
            results_list.append(results)
            dist.barrier()  # accelerator.wait_for_everyone()
        except Exception as e:
            traceback.print_exc()
            print(f"[rank {dist.get_rank()}] Error during evaluation of {task}: {e!r}", flush=True)
            results_list.append(None)
    return results_list


def worker():
    model = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 1.0]]))
    results_list = cli_evaluate(model, ["sum_qa", "parity_qa"])
    if dist.get_rank() == 0:
        for results in results_list:
            print(results, flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
