"""Evaluation records gathered with ``all_gather_object`` while one rank's records hold an object pickle refuses.

Source: modelled on NVIDIA/TensorRT-LLM PR #7507 (``tensorrt_llm/_torch/distributed/communicator.py`` ``safe_gather``:
"Serialize locally" in a ``try``, and the review thread "Fix collective mismatch and potential hang in safe_gather on
serialization failure": every rank must take part in the lengths exchange, with a sentinel length, and then abort or
go on uniformly); pytorch/pytorch PR #150815 (the object collectives' steps: pickle the object, communicate its size -
the first collective -, then the data); the usual GSM8K-style answer extraction of evaluation scripts (``re.search``
for the final ``#### <number>``).

Three ranks score their shards of a toy arithmetic set and gather the per-sample records for the main process's
report. The bug: a record keeps the ``re.Match`` of the answer extraction, which exists only where the model's
output contains ``####`` (in rank 2's shard only). ``all_gather_object`` pickles before it communicates, so rank 2
raises ``TypeError: cannot pickle 're.Match' object`` at the call, and ranks 0 and 1 wait in the size exchange of
the same call for a rank that is not coming.
"""

import re
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20

ANSWER = re.compile(r"####\s*(-?\d+)")
# (question, model output) pairs; the "model" is a stand-in: outputs fixed per sample
SAMPLES = [
    ("2+3", "5"), ("7-4", "3"), ("6*2", "12"), ("9-9", "1"),
    ("1+1", "2"), ("5+5", "so 5+5 #### 10"), ("8+5", "13"), ("3*3", "9"),
    ("4-7", "-3"), ("9+1", "10"), ("6-2", "4"), ("2*8", "two eights #### 16"),
]  # the outputs with "####" (indices 5 and 11) fall in rank 2's shard


def truth(question):
    a, op, b = re.fullmatch(r"(\d+)([+*-])(\d+)", question).groups()
    return {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]


def extract(output):
    match = ANSWER.search(output)
    return match, int(match.group(1)) if match else int(output)


def score_shard(rank, world):
    records = []
    for index in range(rank, len(SAMPLES), world):  # DistributedSampler's interleaved shard, no padding needed
        question, output = SAMPLES[index]
        match, predicted = extract(output)
        records.append({"index": index, "question": question, "predicted": predicted,
                        "correct": predicted == truth(question), "match": match})  # BUG
    return records


def gather_records(records):
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, records)  # WAITS
    return [r for shard in gathered for r in shard]


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    records = score_shard(rank, world)
    local_correct = torch.tensor([sum(r["correct"] for r in records)])
    dist.all_reduce(local_correct)
    all_records = gather_records(records)  # WAITS
    if rank == 0:
        assert sorted(r["index"] for r in all_records) == list(range(len(SAMPLES)))
        print(f"accuracy {local_correct.item()}/{len(SAMPLES)}; with '####': "
              f"{sum(r['match'] is not None for r in all_records)}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
