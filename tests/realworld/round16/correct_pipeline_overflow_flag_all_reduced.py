"""Two pipeline stages agree on the fp16 overflow flag with a MAX all-reduce before one of them skips the step.

Models: hpcaitech/ColossalAI ``colossalai/amp/naive_amp/_fp16_optimizer.py`` ``FP16Optimizer._check_overflow`` (the
flag is all-reduced with ``ReduceOp.MAX`` over the data- and model-parallel groups) and the discussion of PR #1175
("another solution add an extra communication for overflow status, then we could skip the clip grad and step if some
ranks overflowed"); deepspeedai/DeepSpeed PR #994 / ``CheckOverflow.has_overflow`` (the same flag reduction).

What it does: a 2-stage pipeline (rank 0: ``Linear(8, 32) + Tanh``; rank 1: a zero-initialised output ``Linear(32,
1)`` and the MSE loss against unnormalised targets) trains 16 steps with hand-written p2p and an ``FP16Optimizer``
stand-in (gradients rounded through float16, a dynamic loss scaler from 2**12, overflowed steps skipped with the
scale halved, the global gradient norm clipped with an all-reduce over the pipeline group). The first steps overflow
on the last stage only; because the flag is all-reduced, both stages skip them together, halve their scales in step,
and from the first clean step on both join every clip-norm all-reduce. A final barrier ends the run.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

HIDDEN = 32
BATCH = 16
STEPS = 16


class DynamicGradScaler:
    def __init__(self, initial_scale=2.0 ** 12, backoff=0.5, growth_interval=1000):
        self.scale = initial_scale
        self.backoff = backoff
        self.growth_interval = growth_interval
        self._good_steps = 0

    def update(self, overflow):
        if overflow:
            self.scale *= self.backoff
            self._good_steps = 0
        else:
            self._good_steps += 1
            if self._good_steps % self.growth_interval == 0:
                self.scale *= 2.0


class FP16Optimizer:
    def __init__(self, optimizer, scaler, clip_grad, pp_group):
        self.optimizer = optimizer
        self.scaler = scaler
        self.clip_grad = clip_grad
        self.pp_group = pp_group
        self.params = [p for g in optimizer.param_groups for p in g["params"]]

    def _check_overflow(self):
        found = torch.zeros(1)
        for p in self.params:
            if p.grad is not None and not torch.isfinite(p.grad).all():
                found.fill_(1.0)
                break
        # all-reduce over the pipeline (model-parallel) group: every stage skips together
        dist.all_reduce(found, op=dist.ReduceOp.MAX, group=self.pp_group)
        return found.item() > 0

    def clip_grad_norm(self):
        local_sq = torch.stack([p.grad.pow(2).sum() for p in self.params]).sum().reshape(1)
        dist.all_reduce(local_sq, group=self.pp_group)
        total_norm = local_sq.sqrt().item()
        coef = self.clip_grad / (total_norm + 1e-6)
        if coef < 1.0:
            for p in self.params:
                p.grad.mul_(coef)
        return total_norm

    def step(self):
        for p in self.params:
            p.grad = p.grad.to(torch.float16).float()  # fp16 model grads -> fp32 master grads
            p.grad.div_(self.scaler.scale)
        overflow = self._check_overflow()
        self.scaler.update(overflow)
        if overflow:
            self.optimizer.zero_grad(set_to_none=True)
            return False, None
        grad_norm = self.clip_grad_norm()
        self.optimizer.step()
        return True, grad_norm


def make_data():
    g = torch.Generator().manual_seed(0)
    w_true = torch.randn(8, 1, generator=g)
    for _ in range(STEPS):
        x = torch.randn(BATCH, 8, generator=g)
        yield x, 300.0 * (x @ w_true).tanh() + 200.0


def run_stage(rank, stage, fp16_opt):
    for step, (x, target) in enumerate(make_data()):
        if rank == 0:
            h = stage(x)
            dist.send(h.detach(), dst=1)
            grad_h = torch.empty_like(h)
            dist.recv(grad_h, src=1)
            h.backward(grad_h)
        else:
            h_in = torch.empty(BATCH, HIDDEN)
            dist.recv(h_in, src=0)
            h_in.requires_grad_()
            loss = F.mse_loss(stage(h_in), target)
            (loss * fp16_opt.scaler.scale).backward()
            dist.send(h_in.grad, dst=0)
        stepped, norm = fp16_opt.step()
        fp16_opt.optimizer.zero_grad(set_to_none=True)
        if rank == 1:
            state = f"grad norm {norm:.2f}" if stepped else "overflow, skipped"
            print(f"step {step} loss {loss.item():.1f} scale {fp16_opt.scaler.scale:g} {state}", flush=True)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    pp_group = dist.group.WORLD
    if rank == 0:
        stage = nn.Sequential(nn.Linear(8, HIDDEN), nn.Tanh())
    else:
        stage = nn.Linear(HIDDEN, 1)
        nn.init.zeros_(stage.weight)
        nn.init.zeros_(stage.bias)
    opt = torch.optim.SGD(stage.parameters(), lr=0.05)
    fp16_opt = FP16Optimizer(opt, DynamicGradScaler(), clip_grad=1.0, pp_group=pp_group)
    run_stage(rank, stage, fp16_opt)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
