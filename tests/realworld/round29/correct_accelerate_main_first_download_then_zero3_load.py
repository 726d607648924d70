"""``accelerator.main_process_first()`` around the download only, the ZeRO-3 model load made by every process after it.

Models huggingface/accelerate issue #3709 (see the buggy twin; "Removing ``accelerator.main_process_first`` will
solve the problem") and keeps what the context manager is for (accelerate PR #98: "useful when downloading or
processing data"): the main process downloads into the cache first, the others find it there, and the model is
then built by all processes together -- the ZeRO-3 initialisation (``deepspeed.zero.Init``'s ``_zero_init_param``:
``dist.broadcast(param.data, 0, ...)`` per parameter, then partition) is a collective every rank must enter.

Written for this corpus (nothing copied). ``PartialState`` is accelerate's ``_goes_first`` on the gloo group;
``download_pretrained`` writes a tiny causal LM's weights into a cache directory (0.3 s, a stand-in for the hub
download); ``zero3_from_pretrained`` stands in for ``from_pretrained`` under ``zero.Init`` (broadcast from rank 0,
keep a flat shard per rank); training all-gathers the shards for each forward and averages the gradients.
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

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 16


class PartialState:
    def __init__(self):
        self.process_index = dist.get_rank()
        self.is_main_process = self.process_index == 0

    def wait_for_everyone(self):
        dist.barrier()

    @contextmanager
    def _goes_first(self, is_main):
        if not is_main:
            self.wait_for_everyone()
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
            self._zero_init_param(name, param)

    def _zero_init_param(self, name, param):
        dist.broadcast(param.data, 0)
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
    return model, Zero3Params(model)


def worker():
    state = PartialState()
    rank = state.process_index
    if rank == 0:
        shutil.rmtree(cache_dir(), ignore_errors=True)
    dist.barrier()
    with state.main_process_first():
        path = download_pretrained(rank)
    model, zero = zero3_from_pretrained(path)
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
