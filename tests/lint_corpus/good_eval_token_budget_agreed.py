# The same token budget, counted over every rank: the count is all-reduced before the test, so every rank
# leaves the loop at the same step.
# expect: none
import torch
import torch.distributed as dist

PAD = 0


def evaluate(model, loader, budget):
    seen = torch.zeros(1)
    total = torch.zeros(1)
    for inputs, labels in loader:
        loss = model(inputs).sum()
        dist.all_reduce(loss)
        total += loss
        step_tokens = (labels != PAD).sum().float().reshape(1)
        dist.all_reduce(step_tokens)
        seen += step_tokens
        if seen.item() >= budget:
            break
    return total
