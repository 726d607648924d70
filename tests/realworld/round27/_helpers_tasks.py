"""Helper module of round 27 (not an item): two tiny lmms-eval / lm-evaluation-harness style tasks and the
cross-rank gather of their per-document results.

Written after reading lmms-eval ``lmms_eval/__main__.py`` (``cli_evaluate``: one ``try`` per task config,
``results_list.append(None)`` on an exception, ``accelerator.wait_for_everyone()`` after each config),
``lmms_eval/evaluator.py`` (documents sharded ``rank::world_size``, per-document ``process_results``,
``torch.distributed.all_gather_object`` / ``gather_object`` of the per-document results) and lmms-eval PR #1304
("one rank's ``evaluate()`` raises, today's handler logs the error, appends ``None``, and lets the rank return
normally. The other ranks keep going and block on the next collective"). Nothing is copied.

``TASKS[name]["docs"]`` are the task's documents; ``process_results(doc, response)`` scores one response the way a
task's ``utils.py`` does (it strips the reference answer, so a document whose ``answer`` is missing raises
``AttributeError``); ``gather_results`` all-gathers the per-document results of every rank.
"""

import torch.distributed as dist


def _sum_docs():
    docs = [{"doc_id": i, "question": (i, 2 * i + 1), "answer": str(3 * i + 1)} for i in range(6)]
    docs[3]["answer"] = None  # a row of the dataset without a reference answer
    return docs


def _parity_docs():
    return [{"doc_id": i, "question": (7 * i + 2,), "answer": "even" if (7 * i + 2) % 2 == 0 else "odd"}
            for i in range(6)]


TASKS = {
    "sum_qa": {"docs": _sum_docs(), "kind": "sum"},
    "parity_qa": {"docs": _parity_docs(), "kind": "parity"},
}


def process_results(doc, response):
    target = doc["answer"].strip().lower()
    return {"doc_id": doc["doc_id"], "exact_match": float(response.strip().lower() == target)}


def gather_results(per_doc):
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, per_doc)
    return [r for part in gathered for r in part]
