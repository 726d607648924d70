"""prime-rl: micro batches handed out contiguously put image batches on one rank and text-only on another.

Source: PrimeIntellect-ai/prime-rl PR #1959 ("fix: modality-aware batch distribution to prevent FSDP deadlocks",
2026-03); modelled on the RL trainer's ``prepare_batch`` (packing micro batches and dealing them to the
``num_train_workers`` data-parallel ranks) and the FSDP-wrapped vision-language model it feeds. The PR: "FSDP
requires all ranks to execute the same collective operations at each training step. When a batch with images lands
on one rank (triggering the vision encoder's all-gather) while another rank gets a text-only batch, the all-gather
hangs indefinitely. The previous code distributed micro batches contiguously without regard to modality".

Bug: ``prepare_batch`` slices the micro-batch list into contiguous chunks, so with [image, image, text, text] rank 0
gets both image micro batches and rank 1 both text-only ones. At step 0 rank 0 unshards the vision encoder (an
all-gather of its 3-element shards) while rank 1 unshards the language model (an all-gather of 5-element shards).
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


class ShardedModule(torch.nn.Module):
    """FSDP-style: each rank keeps a shard of the flat parameter and all-gathers it before its forward."""

    def __init__(self, numel):
        super().__init__()
        world = dist.get_world_size()
        self.shard_size = -(-numel // world)
        torch.manual_seed(numel)
        full = torch.randn(self.shard_size * world)
        self.shard = torch.nn.Parameter(full.chunk(world)[dist.get_rank()].clone())

    def unshard(self):
        parts = [torch.empty(self.shard_size) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, self.shard.detach())  # WAITS
        return torch.cat(parts)


class VisionEncoder(ShardedModule):
    def forward(self, pixels):
        w = self.unshard()  # WAITS
        return pixels * w[: pixels.shape[-1]].sum()


class LanguageModel(ShardedModule):
    def forward(self, tokens, image_features=None):
        w = self.unshard()  # WAITS
        h = tokens.float() * w.mean()
        if image_features is not None:
            h = h + image_features.mean()
        return h.mean()


class VLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = VisionEncoder(6)
        self.language_model = LanguageModel(10)

    def forward(self, batch):
        feats = self.visual(batch["pixel_values"]) if batch.get("pixel_values") is not None else None  # WAITS
        return self.language_model(batch["input_ids"], feats)  # WAITS


def make_micro_batches():
    image = lambda i: {"input_ids": torch.arange(4) + i, "pixel_values": torch.ones(1, 3) * i}  # noqa: E731
    text = lambda i: {"input_ids": torch.arange(4) + i, "pixel_values": None}  # noqa: E731
    return [image(1), image(2), text(3), text(4)]  # the orchestrator's packed micro batches, images first


def prepare_batch(micro_batches, num_train_workers, rank):
    per_worker = len(micro_batches) // num_train_workers
    return micro_batches[rank * per_worker:(rank + 1) * per_worker]  # BUG


def worker():
    rank = dist.get_rank()
    model = VLM()
    mine = prepare_batch(make_micro_batches(), dist.get_world_size(), rank)
    total = 0.0
    for step, micro_batch in enumerate(mine):
        loss = model(micro_batch)  # WAITS
        total += loss.item()
    print(f"rank {rank}: {len(mine)} micro batches, summed loss {total:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
