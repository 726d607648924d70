"""Logging helpers shared by the round-10 log-level pair (a helper module, not an item).

``process_log_level`` follows transformers' ``TrainingArguments.get_process_log_level``: the main process logs
at ``log_level`` and the replicas at ``log_level_replica``, whose default is ``"warning"``, so INFO records are
dropped on every rank but the main one. ``reduce_mean`` is the all-reduce-then-divide helper many training
scripts keep next to their logger (e.g. ``reduce_mean`` / ``reduce_tensor`` in the ImageNet-style DDP scripts).
"""

import logging

import torch
import torch.distributed as dist

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def process_log_level(rank, log_level="info", log_level_replica="warning"):
    return _LEVELS[log_level] if rank == 0 else _LEVELS[log_level_replica]


def setup_logger(name, rank):
    logger = logging.getLogger(name)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(f"[rank {rank}] %(levelname)s %(message)s"))
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(process_log_level(rank))
    return logger


def reduce_mean(tensor):
    """The mean of ``tensor`` over all ranks: a collective every rank must make."""
    tensor = tensor.detach().clone()
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor / dist.get_world_size()
