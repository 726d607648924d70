# Each rank runs a different number of steps; the all_reduce in the loop hangs
# once the rank with the fewest steps stops.
# expect: 17 rank-dependent-loop dist.all_reduce
import torch
import torch.distributed as dist


def run(model, optimizer, data, steps_for):
    rank = dist.get_rank()
    step = 0
    while step < steps_for[rank]:
        x, y = data[step]
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()
        step += 1
