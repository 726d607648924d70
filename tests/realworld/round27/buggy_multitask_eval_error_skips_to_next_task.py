"""An lmms-eval style evaluation of several tasks in one launch; an exception in one task on one rank is logged,
``None`` is recorded for the task and the rank goes on to the next task -- whose collectives then pair with the
other rank's collectives of the failed task.

Models: EvolvingLMMs-Lab/lmms-eval ``lmms_eval/__main__.py`` ``cli_evaluate`` (a loop over the task configs, each
``cli_evaluate_single`` inside ``try``; ``except Exception: traceback.print_exc(); eval_logger.error("Error during
evaluation ..."); results_list.append(None)``; ``accelerator.wait_for_everyone()`` after a config that
succeeded), ``lmms_eval/evaluator.py`` (documents ``rank::world_size``, per-document ``process_results``, a
gather of the results), lmms-eval PR #1304 ("the other ranks keep going and block on the next collective") and
issue #322.

What it does: 2 ranks evaluate a tiny "model" (a linear layer used as a calculator) on two tasks from
``_helpers_tasks`` (``sum_qa``, ``parity_qa``); each rank scores its documents, the per-document results are
all-gathered (``gather_results``), every rank waits for the others, and rank 0 prints the table.

The bug: document 3 of ``sum_qa`` has no reference answer; it is on rank 1, whose ``process_results`` raises
``AttributeError``. The per-task ``except`` logs it and moves rank 1 on to ``parity_qa``: rank 1's
``parity_qa`` gather pairs with rank 0's ``sum_qa`` gather (rank 0 counts rank 1's parity results as sum_qa
results), rank 1's ``parity_qa`` wait with rank 0's ``sum_qa`` wait, and then rank 0 waits in the ``parity_qa``
gather while rank 1 is in the final barrier. No rank dies; the exception is caught where it cannot be undone.
"""

import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

from _helpers_tasks import TASKS, gather_results, process_results

KIND = "buggy"
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
        results.append(process_results(doc, response))
    results = gather_results(results)  # WAITS
    return {"task": task, "n": len(results), "exact_match": sum(r["exact_match"] for r in results) / len(results)}


def cli_evaluate(model, task_list):
    results_list = []
    for task in task_list:
        try:
            results = evaluate_task(model, task)  # WAITS
            results_list.append(results)
            dist.barrier()  # accelerator.wait_for_everyone()
        except Exception as e:
            traceback.print_exc()
            print(f"[rank {dist.get_rank()}] Error during evaluation of {task}: {e!r}", flush=True)
            results_list.append(None)  # BUG
    return results_list


def worker():
    model = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 1.0]]))
    results_list = cli_evaluate(model, ["sum_qa", "parity_qa"])  # WAITS
    if dist.get_rank() == 0:
        for results in results_list:
            print(results, flush=True)
    dist.barrier()  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
