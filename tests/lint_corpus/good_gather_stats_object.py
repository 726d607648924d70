# The same statistics, gathered with torch's `all_gather_object`, which sizes each rank's payload itself (it
# all-gathers the sizes first): a rank with more batches sends a longer list and nobody raises. Modelled on
# OpenNMT-py's onmt/utils/statistics.py `all_gather_stats_list` and torch's all_gather_object docs, written here.
# expect: none
import torch
import torch.distributed as dist


def gather_stats(stat_list):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, stat_list)
    return out


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
