"""detectron2: an evaluator synchronizes, gathers predictions to the main process, and only the main
process computes metrics; the other ranks return an empty dict.

Source: facebookresearch/detectron2 detectron2/evaluation/coco_evaluation.py ``COCOEvaluator.evaluate``:
``if self._distributed: comm.synchronize(); predictions = comm.gather(self._predictions, dst=0);
predictions = list(itertools.chain(*predictions)); if not comm.is_main_process(): return {}``; and
detectron2/evaluation/evaluator.py ``inference_on_dataset`` (process, then evaluate, on every rank).
Stand-in: tests/realworld/_standins/detectron2/utils/comm.py (mirrors detectron2/utils/comm.py).
Expected: every rank finishes; rank 0 returns the metric, the others {}.
"""

import itertools
import os
from datetime import timedelta

import torch
import torch.distributed as dist

from detectron2.utils import comm

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


class Evaluator:
    def __init__(self, distributed=True):
        self._distributed = distributed
        self._predictions = []

    def reset(self):
        self._predictions = []

    def process(self, inputs, outputs):
        for i, o in zip(inputs, outputs):
            self._predictions.append({"image_id": int(i), "score": float(o)})

    def evaluate(self):
        if self._distributed:
            comm.synchronize()
            predictions = comm.gather(self._predictions, dst=0)
            predictions = list(itertools.chain(*predictions))
            if not comm.is_main_process():
                return {}
        else:
            predictions = self._predictions
        return {"mean_score": sum(p["score"] for p in predictions) / len(predictions)}


def inference_on_dataset(model, data_loader, evaluator):
    evaluator.reset()
    with torch.no_grad():
        for inputs in data_loader:
            evaluator.process(inputs, model(inputs.float().unsqueeze(1)).squeeze(1))
    return evaluator.evaluate()


def worker():
    rank = comm.get_rank()
    model = torch.nn.Linear(1, 1)
    data_loader = [torch.arange(rank * 6 + k * 3, rank * 6 + k * 3 + 3) for k in range(2)]
    return inference_on_dataset(model, data_loader, Evaluator())


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
