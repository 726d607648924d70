"""``accelerator.main_process_first()`` around a ZeRO-3 model load whose parameter initialisation broadcasts from rank 0.

Models huggingface/accelerate issue #3709 ("``Accelerator.main_process_first`` will cause Deepspeed ZeRO3 to hang":
``with accelerator.main_process_first(): model = AutoModelForCausalLM.from_pretrained(...)`` under a ZeRO-3
``DeepSpeedPlugin`` never returns, and "Removing ``accelerator.main_process_first`` will solve the problem"), with the
collective inside: under ZeRO-3, ``from_pretrained`` builds the model in ``deepspeed.zero.Init``, whose
``_zero_init_param`` calls ``dist.broadcast(param.data, 0, ...)`` for every parameter before partitioning it
(``deepspeed/runtime/zero/partition_parameters.py``), and accelerate's ``_goes_first`` keeps the other processes in
``wait_for_everyone()`` until the main process has left the block. The pattern users follow is the one accelerate's
PR #98 introduced for downloads and caches ("This feature is useful when downloading or processing data").

Written for this corpus (nothing copied). ``PartialState`` is accelerate's ``_goes_first`` on the gloo group;
``download_pretrained`` writes a tiny causal LM's weights into a cache directory (0.3 s, a stand-in for the hub
download); ``zero3_from_pretrained`` stands in for ``from_pretrained`` under ``zero.Init``: build, load the state
dict, then for each parameter broadcast from rank 0 and keep this rank's flat shard. Training all-gathers the shards
for each forward (``fetch_sub_module``) and averages the gradients before updating the shards.

The bug: the load sits inside ``main_process_first()``. Rank 0 reaches the first parameter broadcast of the ZeRO-3
initialisation while rank 1 is still in the barrier before the block.
"""
import datetime
import os
import shutil
import tempfile
import time
from contextlib import contextmanager

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.func import functional_call

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 16


class PartialState:
    def __init__(self):
        self.process_index = dist.get_rank()
        self.is_main_process = self.process_index == 0

    def wait_for_everyone(self):
        dist.barrier()  # WAITS

    @contextmanager
    def _goes_first(self, is_main):
        if not is_main:
            self.wait_for_everyone()  # WAITS
        yield
        if is_main:
            self.wait_for_everyone()

    def main_process_first(self):
        return self._goes_first(self.is_main_process)


class TinyCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 8)
        self.lm_head = nn.Linear(8, VOCAB)

    def forward(self, tokens):
        return self.lm_head(self.embed(tokens))


class Zero3Params:
    """Stand-in for ZeRO-3 partitioned parameters: a flat shard per rank, gathered for each forward."""

    def __init__(self, module):
        self.module, self.rank, self.world = module, dist.get_rank(), dist.get_world_size()
        self.shapes, self.shards = {}, {}
        for name, param in module.named_parameters():
            self._zero_init_param(name, param)  # WAITS

    def _zero_init_param(self, name, param):
        dist.broadcast(param.data, 0)  # WAITS
        flat = param.data.reshape(-1)
        flat = torch.cat([flat, flat.new_zeros((-flat.numel()) % self.world)])
        self.shards[name] = flat.chunk(self.world)[self.rank].clone()
        self.shapes[name] = (param.shape, param.numel())
        param.data = torch.empty(0)

    def gather(self):
        full = {}
        for name, shard in self.shards.items():
            parts = [torch.empty_like(shard) for _ in range(self.world)]
            dist.all_gather(parts, shard)
            shape, numel = self.shapes[name]
            full[name] = torch.cat(parts)[:numel].reshape(shape).requires_grad_()
        return full

    def step(self, full, lr):
        for name, tensor in full.items():
            grad = tensor.grad.reshape(-1)
            grad = torch.cat([grad, grad.new_zeros((-grad.numel()) % self.world)])
            dist.all_reduce(grad)
            self.shards[name] -= lr * (grad / self.world).chunk(self.world)[self.rank]


def cache_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r29_hub_cache_{tag}")


def download_pretrained(rank):
    path = os.path.join(cache_dir(), "tiny-causal-lm", "pytorch_model.bin")
    if os.path.exists(path):
        print(f"[rank {rank}] found tiny-causal-lm in the cache", flush=True)
        return path
    print(f"[rank {rank}] downloading tiny-causal-lm", flush=True)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    time.sleep(0.3)  # stand-in for the hub download
    torch.manual_seed(1234)
    torch.save(TinyCausalLM().state_dict(), path)
    return path


def zero3_from_pretrained(path):
    model = TinyCausalLM()
    model.load_state_dict(torch.load(path, weights_only=True))
    return model, Zero3Params(model)  # WAITS


def worker():
    state = PartialState()
    rank = state.process_index
    if rank == 0:
        shutil.rmtree(cache_dir(), ignore_errors=True)
    dist.barrier()
    with state.main_process_first():  # WAITS
        path = download_pretrained(rank)
        model, zero = zero3_from_pretrained(path)  # BUG # WAITS
    g = torch.Generator().manual_seed(rank)
    for step in range(3):
        tokens = torch.randint(0, VOCAB, (4, 6), generator=g)
        full = zero.gather()
        logits = functional_call(model, full, (tokens[:, :-1],))
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        loss.backward()
        zero.step(full, lr=0.5)
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        if rank == 0:
            print(f"step {step}: loss {mean_loss.item() / dist.get_world_size():.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(cache_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
