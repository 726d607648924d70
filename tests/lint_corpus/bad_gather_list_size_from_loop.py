# Training statistics gathered through a fixed-size pickled buffer (OpenNMT-py's onmt/utils/distributed.py
# `all_gather_list`, after fairseq, used by onmt/utils/statistics.py `all_gather_stats_list`): the helper raises
# when the pickled payload exceeds `max_size`, before its all_gather. The payload is built in a loop over this
# rank's own batches, whose number differs between ranks, so one rank raises and the others wait in the
# all_gather. Written here.
# expect: 42 hidden-collective stats_step -> gather_stats -> all_gather_list -> dist.all_gather
import pickle

import torch
import torch.distributed as dist


def all_gather_list(data, max_size=4096):
    world_size = dist.get_world_size()
    enc = pickle.dumps(data)
    if len(enc) + 2 > max_size:
        raise ValueError(f"encoded data exceeds max_size: {len(enc) + 2}")
    buffer = torch.zeros(max_size, dtype=torch.uint8)
    buffer[0], buffer[1] = len(enc) // 255, len(enc) % 255
    buffer[2 : len(enc) + 2] = torch.tensor(list(enc), dtype=torch.uint8)
    out = [torch.zeros(max_size, dtype=torch.uint8) for _ in range(world_size)]
    dist.all_gather(out, buffer)
    return [pickle.loads(bytes(b[2 : 255 * int(b[0]) + int(b[1]) + 2].tolist())) for b in out]


def gather_stats(stat_list):
    return all_gather_list(stat_list)


def stats_step(batches):
    stats = []
    for src, tgt in batches:
        stats.append({"n_words": int(tgt.numel()), "loss": float(src.sum())})
    return gather_stats(stats)


def train(data):
    rank = dist.get_rank()
    mine = data[rank]
    batches = [(torch.ones(4), torch.ones(len(mine)))] * (1 + len(mine))
    for _ in range(3):
        stats_step(batches)
