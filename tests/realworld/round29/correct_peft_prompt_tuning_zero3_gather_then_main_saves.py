"""A Trainer checkpoint of a PEFT prompt-tuning model under ZeRO-3: the adapter state is gathered on every process, written by the main one.

Models huggingface/transformers PR #29980 and huggingface/peft PR #1591 (see the buggy twin) with the rule the fix
follows for ZeRO-3 -- whatever runs a forward of, or gathers, partitioned parameters runs on every process (as
transformers does for ZeRO-3 when it consolidates the state dict with ``accelerator.get_state_dict`` on all ranks
before ``if self.args.should_save:``): the adapter state dict (``get_peft_model_state_dict``, which for prompt
learning runs ``get_prompt_embedding_to_save``, a forward of the prompt encoder) is built on every rank, and only
writing it is left to the main process.

Written for this corpus (nothing copied). ``Zero3Params`` stands in for ZeRO-3 partitioning (a flat shard per rank;
every forward all-gathers; gradients averaged); the frozen base is a tiny embedding + head; the prompt encoder, a
4 x 8 embedding of virtual tokens, is partitioned. ``MiniTrainer`` saves every 2 steps; rank 0 writes
``checkpoint-2`` and ``checkpoint-4``.
"""
import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 16
NUM_VIRTUAL_TOKENS = 4
DIM = 8
SAVE_STEPS = 2
MAX_STEPS = 4


class Zero3Params:
    """Stand-in for ZeRO-3 partitioned parameters of one module."""

    def __init__(self, module):
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.shapes, self.shards = {}, {}
        for name, param in module.named_parameters():
            dist.broadcast(param.data, 0)
            flat = param.data.reshape(-1)
            flat = torch.cat([flat, flat.new_zeros((-flat.numel()) % self.world)])
            self.shards[name] = flat.chunk(self.world)[self.rank].clone()
            self.shapes[name] = (param.shape, param.numel())
            param.data = torch.empty(0)

    def gather(self, name):
        shard = self.shards[name]
        parts = [torch.empty_like(shard) for _ in range(self.world)]
        dist.all_gather(parts, shard)
        shape, numel = self.shapes[name]
        return torch.cat(parts)[:numel].reshape(shape).requires_grad_()

    def step(self, name, full, lr):
        grad = full.grad.reshape(-1)
        grad = torch.cat([grad, grad.new_zeros((-grad.numel()) % self.world)])
        dist.all_reduce(grad)
        self.shards[name] -= lr * (grad / self.world).chunk(self.world)[self.rank]


class PromptEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(NUM_VIRTUAL_TOKENS, DIM)
        self.zero = None

    def forward(self, indices):
        weight = self.zero.gather("embedding.weight")
        return nn.functional.embedding(indices, weight), weight


class PromptTuningModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, DIM).requires_grad_(False)
        self.head = nn.Linear(DIM, VOCAB).requires_grad_(False)
        self.prompt_encoder = PromptEncoder()
        self.prompt_tokens = torch.arange(NUM_VIRTUAL_TOKENS)

    def forward(self, tokens):
        prompts, weight = self.prompt_encoder(self.prompt_tokens)
        x = torch.cat([prompts.unsqueeze(0).expand(tokens.shape[0], -1, -1), self.word_embeddings(tokens)], dim=1)
        return self.head(x.mean(dim=1)), weight

    def get_prompt_embedding_to_save(self):
        prompts, _ = self.prompt_encoder(self.prompt_tokens)
        return prompts.detach()

    def get_peft_model_state_dict(self):
        return {"prompt_embeddings": self.get_prompt_embedding_to_save()}

    def save_pretrained(self, output_dir, state_dict):
        os.makedirs(output_dir, exist_ok=True)
        torch.save(state_dict, os.path.join(output_dir, "adapter_model.bin"))


def output_root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r29_peft_{tag}")


class MiniTrainer:
    def __init__(self, model):
        self.model = model
        self.should_save = dist.get_rank() == 0  # TrainingArguments.should_save

    def _save_checkpoint(self, step):
        output_dir = os.path.join(output_root(), f"checkpoint-{step}")
        state_dict = self.model.get_peft_model_state_dict()  # every rank: the ZeRO-3 gather is a collective
        if self.should_save:
            self.model.save_pretrained(output_dir, state_dict)
            print(f"saved {output_dir}", flush=True)

    def train(self, batches):
        for step, (tokens, labels) in enumerate(batches, start=1):
            logits, weight = self.model(tokens)
            loss = nn.functional.cross_entropy(logits, labels)
            loss.backward()
            self.model.prompt_encoder.zero.step("embedding.weight", weight, lr=0.5)
            if step % SAVE_STEPS == 0:
                self._save_checkpoint(step)
        return loss.item()


def worker():
    rank = dist.get_rank()
    if rank == 0:
        shutil.rmtree(output_root(), ignore_errors=True)
    torch.manual_seed(0)
    model = PromptTuningModel()
    model.prompt_encoder.zero = Zero3Params(model.prompt_encoder)
    g = torch.Generator().manual_seed(50 + rank)
    batches = [(torch.randint(0, VOCAB, (4, 5), generator=g), torch.randint(0, VOCAB, (4,), generator=g))
               for _ in range(MAX_STEPS)]
    loss = MiniTrainer(model).train(batches)
    dist.barrier()
    if rank == 0:
        print(f"checkpoints {sorted(os.listdir(output_root()))}; last loss {loss:.4f}", flush=True)
        shutil.rmtree(output_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
