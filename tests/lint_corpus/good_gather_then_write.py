# Every rank gathers; only the result handling is rank-dependent.
# expect: none
import json

import torch.distributed as dist


def collect_predictions(preds):
    gathered = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(preds, gathered, dst=0)
    if dist.get_rank() == 0:
        merged = [p for part in gathered for p in part]
        with open("predictions.json", "w") as f:
            json.dump(merged, f)
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, len(preds))
    return sum(everyone)
