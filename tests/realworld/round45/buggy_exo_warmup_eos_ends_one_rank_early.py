"""exo: the warmup generation stops at the first EOS each rank samples, and one rank's warmup logits are garbage.

Source: exo-explore/exo issue #1793 ("Model keeps on 'warming up' state on one of the two macos 26.4 macbooks and gets
stuck"), the fix in the thread to `src/exo/worker/engines/mlx/generator/generate.py` (warmup). Two machines run one
model pipeline-parallel; warmup generates `max_tokens` tokens with a greedy sampler, and each step the first stage
sends its activations to the second and receives the last stage's output back (`recv_like`). Every rank runs the
sampler and stops at EOS (`if token in tokenizer.eos_token_ids: break`). On one machine the warmup logits were garbage
(it "generated only 6 out of 50 tokens (hit EOS from garbage)"), so that rank left the warmup loop while "the other
rank hangs forever on recv_like waiting for data that will never come".

Here (gloo, CPU) rank 0 is the first stage and rank 1 the last; rank 1's local logits carry a corrupt bias that makes
EOS its greedy pick at step 2. After warmup a rank joins the runner's task agreement (an `all_gather_object`). On gloo a `send`
completes only when the peer posts the matching `recv`, so rank 0 waits in its next `send` (exo's first stage waited
in the `recv_like` after it).
Bug: the warmup sampler may emit EOS. Fix (the thread): ban the EOS tokens during warmup, so every rank generates
exactly `max_tokens` tokens and the ranks stay in step.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB = 8
EOS = 7
HIDDEN = 4
MAX_TOKENS = 6


def local_logits(rank: int, out: torch.Tensor, step: int) -> torch.Tensor:
    logits = out[:VOCAB].clone()
    if rank == 1 and step >= 2:
        logits[EOS] += 100.0  # the machine whose warmup logits were garbage
    return logits


def sample(logits: torch.Tensor) -> int:
    return int(torch.argmax(logits))  # BUG


def warmup(rank: int) -> int:
    weight = torch.linspace(1.0, -1.0, HIDDEN * VOCAB).reshape(HIDDEN, VOCAB)
    generated = 0
    token = 0
    for step in range(MAX_TOKENS):
        if rank == 0:
            hidden = torch.full((HIDDEN,), float(token + 1))
            dist.send(hidden, dst=1)  # WAITS
            out = torch.empty(VOCAB)
            dist.recv(out, src=1)
        else:
            hidden = torch.empty(HIDDEN)
            dist.recv(hidden, src=0)
            out = hidden @ weight
            dist.send(out, dst=0)
        token = sample(local_logits(rank, out, step))
        generated += 1
        if token == EOS:
            break
    return generated


def worker():
    rank = dist.get_rank()
    generated = warmup(rank)  # WAITS
    print(f"[rank {rank}] warmup generated {generated} tokens")
    tasks = [None] * dist.get_world_size()
    dist.all_gather_object(tasks, {"rank": rank, "ready": True})  # WAITS
    print(f"[rank {rank}] runners ready: {tasks}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
