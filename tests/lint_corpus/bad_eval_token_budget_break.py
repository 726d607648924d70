# Evaluation stops once this rank has seen its share of a token budget, counted from its own batches: the
# ranks' shards hold different numbers of padding tokens, so they leave the loop after different numbers of
# steps and the rank that stays waits in the next all_reduce. The shape of "max_eval_tokens" style loops
# (e.g. the eval loops of fairseq and nanoGPT-style scripts that stop on a token count), written here.
# expect: 17 early-exit dist.all_reduce
import torch
import torch.distributed as dist

PAD = 0


def evaluate(model, loader, budget):
    seen = 0
    total = torch.zeros(1)
    for inputs, labels in loader:
        loss = model(inputs).sum()
        dist.all_reduce(loss)
        total += loss
        seen += int((labels != PAD).sum())
        if seen >= budget // dist.get_world_size():
            break
    return total
