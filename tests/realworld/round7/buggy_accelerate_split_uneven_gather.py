"""Distributed inference with ``split_between_processes`` on an uneven prompt list and a gather per prompt.

Models the distributed-inference recipe of huggingface/accelerate (PR #1410 "Distributed prompting/inference
utility", ``docs/source/usage_guides/distributed_inference.md``: ``with state.split_between_processes(prompts)
as prompt: ...``). The docs' own example: with 3 prompts on 2 GPUs "the first GPU would receive the first two
prompts and the second GPU the third"; to gather the results, ``apply_padding=True`` makes the lists the same
length. Here the loop scores each prompt with a tiny reward model and calls ``accelerator.gather`` on every
prompt to log a running mean on the main process, without padding.

Rank 0 gets two prompts and rank 1 one: rank 0's second ``gather`` (an all-gather) has no partner, while rank 1
has left the loop and waits in ``wait_for_everyone()``.

BUG: ``split_between_processes(prompts)`` without ``apply_padding=True`` gives the ranks different numbers of
loop iterations, and each iteration makes a collective.
"""

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("accelerate",)

PROMPTS = ["a photo of a cat", "a watercolor of a dog", "a sketch of a bird"]


def encode(prompt):
    """A stand-in tokenizer + encoder: a fixed-size feature vector from the characters."""
    codes = torch.tensor([ord(c) % 17 for c in prompt], dtype=torch.float32)
    return torch.stack([codes.mean(), codes.std(), codes.max(), torch.tensor(float(len(prompt)))]) / 10.0


def run_inference(accelerator, reward_model, prompts):
    scores = []
    with accelerator.split_between_processes(prompts) as my_prompts:  # BUG
        for prompt in my_prompts:
            with torch.no_grad():
                score = reward_model(encode(prompt)).reshape(1)
            scores.append(score)
            all_scores = accelerator.gather(score)  # WAITS
            if accelerator.is_main_process:
                print(f"running mean reward {all_scores.mean().item():.4f}")
    return scores


def worker():
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    reward_model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    scores = run_inference(accelerator, reward_model, PROMPTS)  # WAITS
    accelerator.wait_for_everyone()  # WAITS
    if accelerator.is_main_process:
        print(f"scored {len(scores)} prompts on the main process")


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
