"""Pipeline-parallel group created without the configured timeout, so it keeps a short default (buggy).

Models: 1CatAI/1Cat-vLLM PR #619 ("Pass --distributed-timeout-seconds to the NCCL subgroups": the world group got
the configured timeout, the TP/PP device groups made by ``GroupCoordinator`` kept PyTorch's default, and "the first
stage compiles its Triton kernels for minutes while the next stage already sits in its first receive"), pytorch/
pytorch issue #135352 (the timeout that fired belonged to a group FSDP created with the default), issue #54524 and
PR #14435 (``new_group(timeout=...)`` is per group), NVIDIA/Megatron-LM PR #723 (timeout passed to ``new_group``).

Two pipeline stages serve a toy decoder. ``GroupCoordinator`` wraps the PP group; BUG: ``init_pp_group`` builds it
without the timeout the user configured (as 1Cat-vLLM did before PR #619), so the PP group keeps the short
default while the world group has ``DIST_TIMEOUT_SECONDS``. Stage 0 "compiles" its kernels
before the first forward (a sleep standing in for the compile, shorter than the configured timeout), stage 1
waits in its first receive meanwhile, then three decode steps pass hidden states forward and tokens back.
Stage 1's first receive
gives up after ``LIB_DEFAULT_SUBGROUP_TIMEOUT`` seconds while stage 0 is still compiling; stage 0 then sends into a
dead peer. ``LIB_DEFAULT_SUBGROUP_TIMEOUT`` is a scaled-down stand-in for the library default (600 s in the PR).
"""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

DIST_TIMEOUT_SECONDS = TIMEOUT  # --distributed-timeout-seconds
LIB_DEFAULT_SUBGROUP_TIMEOUT = 3  # stand-in for the default a subgroup gets when none is passed
COMPILE_SECONDS = 6  # stand-in for stage 0's first-time kernel compilation
VOCAB, HID, DECODE_STEPS = 20, 8, 3


class GroupCoordinator:
    def __init__(self, ranks, timeout=None):
        if timeout is None:
            timeout = timedelta(seconds=LIB_DEFAULT_SUBGROUP_TIMEOUT)
        self.ranks = ranks
        self.device_group = dist.new_group(ranks, timeout=timeout)
        self.rank_in_group = ranks.index(dist.get_rank())

    @property
    def next_rank(self):
        return self.ranks[(self.rank_in_group + 1) % len(self.ranks)]

    @property
    def prev_rank(self):
        return self.ranks[(self.rank_in_group - 1) % len(self.ranks)]

    def send(self, t):
        dist.send(t, dst=self.next_rank, group=self.device_group)

    def recv(self, shape, dtype=torch.float32):
        buf = torch.empty(shape, dtype=dtype)
        dist.recv(buf, src=self.prev_rank, group=self.device_group)  # WAITS
        return buf


def init_pp_group():
    return GroupCoordinator([0, 1])  # BUG


class FirstStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, HID)
        self.compiled = False

    def compile_kernels(self):
        time.sleep(COMPILE_SECONDS)
        self.compiled = True

    def forward(self, tok):
        if not self.compiled:
            self.compile_kernels()
        return torch.tanh(self.emb(tok))


def run_stage(rank, pp):
    torch.manual_seed(rank)
    tokens = [3]
    with torch.no_grad():
        if rank == 0:
            stage = FirstStage()
            tok = torch.tensor([tokens[-1]])
            for _ in range(DECODE_STEPS):
                pp.send(stage(tok))
                tok = pp.recv((1,), dtype=torch.long)
                tokens.append(int(tok))
            print(f"generated {tokens}", flush=True)
        else:
            head = nn.Linear(HID, VOCAB)
            for _ in range(DECODE_STEPS):
                h = pp.recv((1, HID))  # WAITS
                pp.send(head(h).argmax(-1))


def worker():
    pp = init_pp_group()
    run_stage(dist.get_rank(), pp)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
