"""verl's validation with a test set that does not divide by the world size: the TP-group all-gather of
unequal chunks.

Models: verl-project/verl issue #12 ("Hangs during vllm rollout, no error message"), whose thread names two
causes; this item keeps the second -- "when the evaluation dataset size is not divisible by the world_size, and
tensor parallel is enabled for vllm": the FSDP-vLLM sharding manager all-gathers the prompts inside the tensor
parallel group (``verl/utils/torch_functional.py`` ``allgather_dict_tensors``: one ``torch.empty_like(value)``
per member, ``torch.distributed.all_gather``), and after the test batch is split over the ranks the members of
one group hold different numbers of prompts. The fix in verl is ``pad_dataproto_to_divisor`` before the
dispatch and ``unpad_dataproto`` after it (``verl/protocol.py``, ``ray_trainer._validate``).
Code modelled (written here, not copied): ``DataProto.chunk`` (a ``torch.chunk``-style ceil split),
``FSDPVLLMShardingManager.preprocess_data`` / ``postprocess_data``, ``allgather_dict_tensors``.

Here 2 ranks form one vLLM tensor-parallel group (TP = world = 2). The test set has 5 prompts; the split gives
rank 0 three and rank 1 two. Each rank allocates its all-gather outputs from its own chunk, so the all-gather of
``input_ids`` exchanges 3-row and 2-row tensors: a collective mismatch.
Bug: the unpadded split (BUG). Both ranks are in the all-gather (WAITS).
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

N_TEST_PROMPTS = 5
PROMPT_LEN = 6
VOCAB = 32


def make_test_batch():
    g = torch.Generator().manual_seed(7)
    input_ids = torch.randint(0, VOCAB, (N_TEST_PROMPTS, PROMPT_LEN), generator=g)
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}


def chunk_batch(batch, chunks):
    # DataProto.chunk: torch.chunk on every tensor, ceil(n / chunks) rows per piece
    pieces = {k: torch.chunk(v, chunks, dim=0) for k, v in batch.items()}
    return [{k: pieces[k][i] for k in batch} for i in range(chunks)]


def allgather_dict_tensors(tensors, size, group):
    out = {}
    for key in sorted(tensors):
        value = tensors[key]
        gathered = [torch.empty_like(value) for _ in range(size)]
        dist.all_gather(gathered, value, group=group)  # WAITS
        out[key] = torch.cat(gathered, dim=0)
    return out


class ShardingManager:
    """The FSDP -> vLLM resharding around generate_sequences (tp group = the whole world here)."""

    def __init__(self, tp_group):
        self.tp_group = tp_group
        self.tp_size = dist.get_world_size(tp_group)
        self.tp_rank = dist.get_rank(tp_group)

    def preprocess_data(self, data):
        return allgather_dict_tensors(data, self.tp_size, self.tp_group)  # WAITS

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
    data = manager.preprocess_data(data)  # WAITS
    responses = policy.generate(data["input_ids"], data["attention_mask"])
    data = dict(data, responses=responses)
    return manager.postprocess_data(data)


def reward_fn(batch):
    # rule-based score: the response token matches the prompt's first token parity
    return (batch["responses"][:, 0] % 2 == batch["input_ids"][:, 0] % 2).float()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    policy = TinyPolicy()
    manager = ShardingManager(dist.group.WORLD)
    test_batch = make_test_batch()
    my_chunk = chunk_batch(test_batch, world)[rank]  # BUG
    print(f"[rank {rank}] validating {my_chunk['input_ids'].shape[0]} prompts", flush=True)
    out = generate_sequences(manager, policy, my_chunk)  # WAITS
    scores = reward_fn(out)
    stats = torch.tensor([scores.sum().item(), float(scores.numel())])
    dist.all_reduce(stats)
    if rank == 0:
        print(f"val/test_score: {stats[0].item() / stats[1].item():.3f} over {int(stats[1].item())} prompts", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
