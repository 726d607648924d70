"""verl's validation with a test set that does not divide by the world size, padded to a multiple of it first.

Models: verl-project/verl issue #12 (the hang when "the evaluation dataset size is not divisible by the
world_size, and tensor parallel is enabled for vllm") and verl's fix in ``verl/protocol.py`` /
``ray_trainer._validate``: ``pad_dataproto_to_divisor(test_batch, world_size)`` before the dispatch (the padding
rows are copies of the first rows), ``unpad_dataproto(output, pad_size)`` after it, so every member of the
tensor-parallel group all-gathers chunks of one size (``allgather_dict_tensors``,
``FSDPVLLMShardingManager.preprocess_data`` / ``postprocess_data``). Written here, not copied.

2 ranks, one TP group; 5 test prompts padded to 6, three per rank; the padded row is dropped before scoring.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

N_TEST_PROMPTS = 5
PROMPT_LEN = 6
VOCAB = 32


def make_test_batch():
    g = torch.Generator().manual_seed(7)
    input_ids = torch.randint(0, VOCAB, (N_TEST_PROMPTS, PROMPT_LEN), generator=g)
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}


def pad_to_divisor(batch, divisor):
    n = next(iter(batch.values())).shape[0]
    pad = (-n) % divisor
    if pad == 0:
        return batch, 0
    return {k: torch.cat([v, v[:pad]], dim=0) for k, v in batch.items()}, pad


def chunk_batch(batch, chunks):
    pieces = {k: torch.chunk(v, chunks, dim=0) for k, v in batch.items()}
    return [{k: pieces[k][i] for k in batch} for i in range(chunks)]


def allgather_dict_tensors(tensors, size, group):
    out = {}
    for key in sorted(tensors):
        value = tensors[key]
        gathered = [torch.empty_like(value) for _ in range(size)]
        dist.all_gather(gathered, value, group=group)
        out[key] = torch.cat(gathered, dim=0)
    return out


class ShardingManager:
    def __init__(self, tp_group):
        self.tp_group = tp_group
        self.tp_size = dist.get_world_size(tp_group)
        self.tp_rank = dist.get_rank(tp_group)

    def preprocess_data(self, data):
        return allgather_dict_tensors(data, self.tp_size, self.tp_group)

    def postprocess_data(self, data):
        return {k: torch.chunk(v, self.tp_size, dim=0)[self.tp_rank] for k, v in data.items()}


class TinyPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    @torch.no_grad()
    def generate(self, input_ids, attention_mask):
        h = (self.emb(input_ids) * attention_mask.unsqueeze(-1)).mean(dim=1)
        return self.head(h).argmax(dim=-1, keepdim=True)


def generate_sequences(manager, policy, data):
    data = manager.preprocess_data(data)
    responses = policy.generate(data["input_ids"], data["attention_mask"])
    data = dict(data, responses=responses)
    return manager.postprocess_data(data)


def reward_fn(batch):
    return (batch["responses"][:, 0] % 2 == batch["input_ids"][:, 0] % 2).float()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    policy = TinyPolicy()
    manager = ShardingManager(dist.group.WORLD)
    test_batch, pad_size = pad_to_divisor(make_test_batch(), world)
    per_rank = N_TEST_PROMPTS + pad_size
    per_rank //= world
    my_chunk = chunk_batch(test_batch, world)[rank]
    print(f"[rank {rank}] validating {my_chunk['input_ids'].shape[0]} prompts (pad_size {pad_size})", flush=True)
    out = generate_sequences(manager, policy, my_chunk)
    scores = reward_fn(out)
    # unpad: the padding rows are the last pad_size rows of the whole batch, i.e. of the last rank's chunk
    first_row = rank * per_rank
    keep = max(0, min(per_rank, N_TEST_PROMPTS - first_row))
    scores = scores[:keep]
    stats = torch.tensor([scores.sum().item(), float(scores.numel())])
    dist.all_reduce(stats)
    if rank == 0:
        print(f"val/test_score: {stats[0].item() / stats[1].item():.3f} over {int(stats[1].item())} prompts", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
