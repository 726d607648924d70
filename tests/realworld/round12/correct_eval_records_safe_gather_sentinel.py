"""Evaluation records gathered by a "safe" object gather that agrees on serialization failures before the data.

Source: modelled on NVIDIA/TensorRT-LLM PR #7507 (``tensorrt_llm/_torch/distributed/communicator.py`` ``safe_gather``:
serialize locally in a ``try``; the review's fix, "Use a sentinel length and let every rank participate in the same
lengths Allgather, then abort uniformly"); pytorch/pytorch PR #150815 (the object collectives' steps: pickle, size
exchange, data); the GSM8K-style answer extraction of evaluation scripts (``re.search`` for ``#### <number>``).

Three ranks score their shards of a toy arithmetic set and gather the per-sample records for the main process's
report; the records of rank 2 keep the ``re.Match`` of the extraction, which pickle refuses. Correct, though it looks
suspicious: ``pickle.dumps`` fails on one rank only and the ``except`` branch sits right before a collective; but
every rank makes the same lengths all-gather (a failed rank sends -1), every rank sees the sentinel and every rank
takes the same fallback (the records with their unpicklable values replaced by ``repr``), so the calls stay aligned.
"""

import pickle
import re
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
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
                        "correct": predicted == truth(question), "match": match})
    return records


def safe_all_gather(obj):
    try:
        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        length = len(payload)
    except Exception:  # keep collectives aligned: every rank still joins the lengths exchange
        payload, length = b"", -1
    lengths = [torch.zeros(1, dtype=torch.int64) for _ in range(dist.get_world_size())]
    dist.all_gather(lengths, torch.tensor([length]))
    lengths = [int(n) for n in lengths]
    if min(lengths) < 0:
        return None  # some rank could not serialize: every rank knows it
    buffer = torch.zeros(max(lengths), dtype=torch.uint8)
    buffer[:length] = torch.frombuffer(bytearray(payload), dtype=torch.uint8)
    parts = [torch.empty_like(buffer) for _ in lengths]
    dist.all_gather(parts, buffer)
    return [pickle.loads(part[:n].numpy().tobytes()) for part, n in zip(parts, lengths)]


def plain(record):
    return {k: v if isinstance(v, (bool, int, float, str, type(None))) else repr(v) for k, v in record.items()}


def gather_records(records):
    gathered = safe_all_gather(records)
    if gathered is None:  # the same on every rank
        gathered = safe_all_gather([plain(r) for r in records])
    return [r for shard in gathered for r in shard]


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    records = score_shard(rank, world)
    local_correct = torch.tensor([sum(r["correct"] for r in records)])
    dist.all_reduce(local_correct)
    all_records = gather_records(records)
    if rank == 0:
        assert sorted(r["index"] for r in all_records) == list(range(len(SAMPLES)))
        print(f"accuracy {local_correct.item()}/{len(SAMPLES)}; with '####': "
              f"{sum(r['match'] is not None for r in all_records)}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
