# A step is skipped when the loss is not finite on any rank — but the `or` asks the other ranks only when
# this rank's own loss was finite: a rank whose batch gave a NaN skips the all_reduce that the others wait
# in. The skip-on-overflow guard of mixed-precision loops (e.g. fairseq's and DeepSpeed's overflow checks,
# which all-reduce the flag on every rank), written here with the short circuit that breaks it.
# expect: 20 hidden-collective any_rank -> dist.all_reduce
import torch
import torch.distributed as dist


def any_rank(flag):
    t = torch.tensor([1.0 if flag else 0.0])
    dist.all_reduce(t)
    return bool(t.item() > 0)


def train(model, loader, opt):
    for inputs, targets in loader:
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        bad = not torch.isfinite(loss)
        if bad or any_rank(bad):
            continue
        loss.backward()
        opt.step()
