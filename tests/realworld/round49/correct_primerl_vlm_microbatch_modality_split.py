"""prime-rl: micro batches are dealt by modality, so every rank runs the same modality at each step (the fix).

Source: PrimeIntellect-ai/prime-rl PR #1959 ("fix: modality-aware batch distribution to prevent FSDP deadlocks",
2026-03); modelled on the RL trainer's ``prepare_batch`` (packing micro batches and dealing them to the
``num_train_workers`` data-parallel ranks) and the FSDP-wrapped vision-language model it feeds. The PR: "FSDP
requires all ranks to execute the same collective operations at each training step. When a batch with images lands
on one rank (triggering the vision encoder's all-gather) while another rank gets a text-only batch, the all-gather
hangs indefinitely. The previous code distributed micro batches contiguously without regard to modality".

Correct twin (the PR's fix): micro batches are split into multimodal and text-only groups, each group padded with
dummy micro batches to a multiple of ``num_train_workers`` and dealt in strided order, so at every step index all
ranks hold the same modality and unshard the same modules in the same order.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
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
        dist.all_gather(parts, self.shard.detach())
        return torch.cat(parts)


class VisionEncoder(ShardedModule):
    def forward(self, pixels):
        w = self.unshard()
        return pixels * w[: pixels.shape[-1]].sum()


class LanguageModel(ShardedModule):
    def forward(self, tokens, image_features=None):
        w = self.unshard()
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
        feats = self.visual(batch["pixel_values"]) if batch.get("pixel_values") is not None else None
        return self.language_model(batch["input_ids"], feats)


def make_micro_batches():
    image = lambda i: {"input_ids": torch.arange(4) + i, "pixel_values": torch.ones(1, 3) * i}  # noqa: E731
    text = lambda i: {"input_ids": torch.arange(4) + i, "pixel_values": None}  # noqa: E731
    return [image(1), image(2), text(3), text(4)]  # the orchestrator's packed micro batches, images first


def _make_dummy_batch(like):
    dummy = {"input_ids": torch.zeros_like(like["input_ids"]), "pixel_values": None, "dummy": True}
    if like.get("pixel_values") is not None:
        dummy["pixel_values"] = torch.zeros_like(like["pixel_values"])
    return dummy


def _pad_group_for_distribution(group, num_train_workers):
    while group and len(group) % num_train_workers:
        group.append(_make_dummy_batch(group[0]))
    return group


def prepare_batch(micro_batches, num_train_workers, rank):
    multimodal = [mb for mb in micro_batches if mb.get("pixel_values") is not None]
    text_only = [mb for mb in micro_batches if mb.get("pixel_values") is None]
    ordered = (_pad_group_for_distribution(multimodal, num_train_workers)
               + _pad_group_for_distribution(text_only, num_train_workers))
    return ordered[rank::num_train_workers]


def worker():
    rank = dist.get_rank()
    model = VLM()
    mine = prepare_batch(make_micro_batches(), dist.get_world_size(), rank)
    total = 0.0
    for step, micro_batch in enumerate(mine):
        loss = model(micro_batch)
        total += loss.item()
    print(f"rank {rank}: {len(mine)} micro batches, summed loss {total:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
