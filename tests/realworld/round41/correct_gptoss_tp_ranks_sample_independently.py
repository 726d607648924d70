"""gpt-oss: rank 0 samples the next token and broadcasts it, so every model-parallel rank follows one history.

Source: openai/gpt-oss issue #270 ("Distributed Torch and Triton sampling can diverge across model-parallel ranks",
2026-08) and PR #285 ("Synchronize distributed token sampling across model-parallel ranks"). Modelled:
`gpt_oss/torch/model.py` `TokenGenerator.generate` and the expert MLP's `dist.all_reduce` over the ranks'
intermediate-dimension shards (`MLPBlock.forward`), driven as `gpt_oss/generate.py` does (torchrun, one rank per
shard). The issue: "The reference Torch and Triton token generators perform stochastic next-token sampling
independently on every distributed rank ... each rank currently calls torch.multinomial() locally and no sampled
token is broadcast"; the ranks then feed different token histories into later collectives, and the loop ends on
each rank at its own `if predicted_token in stop_tokens: break`. The same divergence, reported as a hang, is
NVIDIA/TensorRT-LLM PR #12024 ("each TP rank has independent CUDA random state, causing torch.multinomial to
produce different tokens from identical logits").

The fix (PR #285): "when torch.distributed is initialized, sample/select the next token only on rank 0; broadcast
that token to every rank before continuing generation" -- "a nonzero rank does not call torch.multinomial() and
instead consumes the token received from rank 0". Same model and seeds; both ranks print the same tokens.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB, HIDDEN, INTERMEDIATE, STOP_TOKEN = 8, 6, 8, 7
SAMPLING_SEEDS = (1000, 1003)  # each rank's own RNG stream


class ShardedMLPModel:
    """Embedding and unembedding replicated; the MLP's intermediate dimension split across ranks."""

    def __init__(self, rank, world_size):
        g = torch.Generator().manual_seed(0)
        self.embedding = torch.randn(VOCAB, HIDDEN, generator=g)
        w1 = torch.randn(HIDDEN, INTERMEDIATE, generator=g) * 0.5
        w2 = torch.randn(INTERMEDIATE, HIDDEN, generator=g) * 0.5
        self.unembedding = torch.randn(HIDDEN, VOCAB, generator=g) * 0.15
        shard = INTERMEDIATE // world_size
        self.mlp1_weight = w1[:, rank * shard:(rank + 1) * shard]
        self.mlp2_weight = w2[rank * shard:(rank + 1) * shard]

    def mlp(self, x):
        t = torch.relu(x @ self.mlp1_weight) @ self.mlp2_weight
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return x + t

    def __call__(self, tokens):
        x = self.embedding[tokens]
        x = self.mlp(x)
        return x @ self.unembedding


class TokenGenerator:
    def __init__(self, rank, world_size):
        self.model = ShardedMLPModel(rank, world_size)
        self.rng = torch.Generator().manual_seed(SAMPLING_SEEDS[rank])

    @torch.inference_mode()
    def generate(self, prompt_tokens, stop_tokens, temperature=1.0, max_tokens=12):
        tokens = list(prompt_tokens)
        num_generated_tokens = 0
        while num_generated_tokens < max_tokens:
            logits = self.model(torch.as_tensor(tokens))[-1]
            probs = torch.softmax(logits * (1.0 / temperature), dim=-1)
            chosen = torch.zeros(1, dtype=torch.int64)
            if dist.get_rank() == 0:
                chosen[0] = torch.multinomial(probs, num_samples=1, generator=self.rng).item()
            dist.broadcast(chosen, src=0)
            predicted_token = int(chosen.item())
            tokens.append(predicted_token)
            num_generated_tokens += 1
            yield predicted_token
            if predicted_token in stop_tokens:
                break


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    generator = TokenGenerator(rank, world_size)
    generated = []
    for token in generator.generate([1, 2, 3], stop_tokens=[STOP_TOKEN]):
        generated.append(token)
    print(f"[rank {rank}] generated {generated}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
