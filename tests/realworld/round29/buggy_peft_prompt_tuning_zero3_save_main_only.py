"""A Trainer checkpoint of a PEFT prompt-tuning model under ZeRO-3, saved by the main process only.

Models huggingface/transformers PR #29980 ("fix prompt tunning + deepspeed zero3 + checkpoint_saving hang issue":
"When I use deepspeed zero3 and prompt tuning to finetune large model. find training hang after saving checkpoint.
the prompt-tuning has prompt_encoder forward in model save_pretrained. only rank0 call the prompt_encoder forward in
deepspeed zero3"), with huggingface/peft PR #1591 (prompt tuning under ZeRO-3, the same reporter) and the code on that
path: transformers ``Trainer._save_checkpoint`` -> ``save_model`` -> ``if self.args.should_save: self._save(...)``
-> ``model.save_pretrained``; PEFT ``PeftModel.save_pretrained`` -> ``get_peft_model_state_dict``, which for prompt
learning calls ``model.get_prompt_embedding_to_save(adapter_name)``, i.e. ``prompt_encoder(prompt_tokens)`` -- a
forward of a ZeRO-3 module, whose pre-forward hook all-gathers its partitioned parameters (DeepSpeed
``fetch_sub_module``).

Written for this corpus (nothing copied). ``Zero3Params`` stands in for ZeRO-3 partitioning (a flat shard per rank;
every forward all-gathers; gradients averaged, then each rank updates its shard). The frozen base model is a tiny
embedding + head replicated on every rank; the prompt encoder is a 4 x 8 embedding of virtual tokens, partitioned.
``MiniTrainer`` saves every 2 steps; ``should_save`` is true on rank 0 only, as in transformers.

The bug: ``save_pretrained`` (on rank 0 only) runs the prompt encoder's forward, whose all-gather is matched by rank
1's step-3 training forward; from there rank 1 is one collective ahead. At step 3 rank 0 is in its forward's
all-gather of the prompt-encoder shards while rank 1, past that forward, is in the gradient all-reduce of
``Zero3Params.step``.
"""
import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
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
        dist.all_gather(parts, shard)  # WAITS
        shape, numel = self.shapes[name]
        return torch.cat(parts)[:numel].reshape(shape).requires_grad_()

    def step(self, name, full, lr):
        grad = full.grad.reshape(-1)
        grad = torch.cat([grad, grad.new_zeros((-grad.numel()) % self.world)])
        dist.all_reduce(grad)  # WAITS
        self.shards[name] -= lr * (grad / self.world).chunk(self.world)[self.rank]


class PromptEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(NUM_VIRTUAL_TOKENS, DIM)
        self.zero = None

    def forward(self, indices):
        weight = self.zero.gather("embedding.weight")  # WAITS
        return nn.functional.embedding(indices, weight), weight


class PromptTuningModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, DIM).requires_grad_(False)
        self.head = nn.Linear(DIM, VOCAB).requires_grad_(False)
        self.prompt_encoder = PromptEncoder()
        self.prompt_tokens = torch.arange(NUM_VIRTUAL_TOKENS)

    def forward(self, tokens):
        prompts, weight = self.prompt_encoder(self.prompt_tokens)  # WAITS
        x = torch.cat([prompts.unsqueeze(0).expand(tokens.shape[0], -1, -1), self.word_embeddings(tokens)], dim=1)
        return self.head(x.mean(dim=1)), weight

    def get_prompt_embedding_to_save(self):
        prompts, _ = self.prompt_encoder(self.prompt_tokens)
        return prompts.detach()

    def save_pretrained(self, output_dir):
        os.makedirs(output_dir, exist_ok=True)
        state = {"prompt_embeddings": self.get_prompt_embedding_to_save()}  # get_peft_model_state_dict
        torch.save(state, os.path.join(output_dir, "adapter_model.bin"))


def output_root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r29_peft_{tag}")


class MiniTrainer:
    def __init__(self, model):
        self.model = model
        self.should_save = dist.get_rank() == 0  # TrainingArguments.should_save

    def _save_checkpoint(self, step):
        output_dir = os.path.join(output_root(), f"checkpoint-{step}")
        if self.should_save:
            self.model.save_pretrained(output_dir)  # BUG
            print(f"saved {output_dir}", flush=True)

    def train(self, batches):
        for step, (tokens, labels) in enumerate(batches, start=1):
            logits, weight = self.model(tokens)  # WAITS
            loss = nn.functional.cross_entropy(logits, labels)
            loss.backward()
            self.model.prompt_encoder.zero.step("embedding.weight", weight, lr=0.5)  # WAITS
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
    loss = MiniTrainer(model).train(batches)  # WAITS
    dist.barrier()
    if rank == 0:
        print(f"checkpoints {sorted(os.listdir(output_root()))}; last loss {loss:.4f}", flush=True)
        shutil.rmtree(output_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
