"""Distributed inference with ``split_between_processes(..., apply_padding=True)`` and the padding dropped
after the gather.

The recipe of huggingface/accelerate PR #1410 and ``docs/source/usage_guides/distributed_inference.md``: "You can
pass in ``apply_padding=True`` to ensure that the lists of prompts are padded to the same length, with extra
data being taken from the last sample", then drop the extra results after gathering. With 3 prompts on 2 ranks
both ranks get two prompts (rank 1's second is a copy of the last prompt), so the per-prompt ``gather`` calls
pair up; the main process keeps the first ``len(prompts)`` results of the final ``gather_object``.

The loop bounds differ in content per rank but not in length; ``print`` on the main process makes no collective.
"""

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("accelerate",)

PROMPTS = ["a photo of a cat", "a watercolor of a dog", "a sketch of a bird"]


def encode(prompt):
    codes = torch.tensor([ord(c) % 17 for c in prompt], dtype=torch.float32)
    return torch.stack([codes.mean(), codes.std(), codes.max(), torch.tensor(float(len(prompt)))]) / 10.0


def run_inference(accelerator, reward_model, prompts):
    results = []
    with accelerator.split_between_processes(prompts, apply_padding=True) as my_prompts:
        for prompt in my_prompts:
            with torch.no_grad():
                score = reward_model(encode(prompt)).reshape(1)
            results.append((prompt, score.item()))
            all_scores = accelerator.gather(score)
            if accelerator.is_main_process:
                print(f"running mean reward {all_scores.mean().item():.4f}")
    return results


def worker():
    from accelerate import Accelerator
    from accelerate.utils import gather_object

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    reward_model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    results = run_inference(accelerator, reward_model, PROMPTS)
    everything = gather_object(results)[: len(PROMPTS)]  # drop the padding
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        assert [prompt for prompt, _ in everything] == PROMPTS, everything
        print(f"scored {len(everything)} prompts")


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
