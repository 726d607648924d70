"""Two pipeline stages decide on their own whether their fp16 gradients overflowed; only one joins the clip-norm reduce.

Models: hpcaitech/ColossalAI PR #1175 ("different overflow status lead to communication stuck": in
``colossalai/amp/naive_amp/_fp16_optimizer.py`` the step returned before ``clip_grad_norm`` on overflow, and
"different pipeline ranks may have different overflow status, if the overflow do not join the clip grad norm, the
all reduce process will be stuck"); that file's ``_check_overflow``, which all-reduces the overflow flag with
``ReduceOp.MAX`` over the data- and model-parallel groups; deepspeedai/DeepSpeed PR #994 (an overflow in one pipeline
stage but not another "can silently hang"; DeepSpeed's ``CheckOverflow.has_overflow`` all-reduces the flag).

What it does: a 2-stage pipeline (rank 0: ``Linear(8, 32) + Tanh``; rank 1: a zero-initialised output ``Linear(32,
1)`` and the MSE loss against unnormalised targets in the hundreds) trains with hand-written p2p (``send``/``recv`` of
the activations and their gradients) and an ``FP16Optimizer`` stand-in: gradients are rounded through float16 as fp16
model gradients would be, a dynamic loss scaler starts at 2**12, overflowed steps are skipped with the scale halved,
and the global gradient norm is clipped with an all-reduce of the squared norms over the pipeline group (Megatron's
``clip_grad_norm_fp32`` reduces over the model-parallel group).

The bug: ``_check_overflow`` looks only at the rank's own stage. In step 0 the last stage's weight gradients (error
x activation, scaled by 4096) overflow float16 while the first stage's are all zero (the output layer is
zero-initialised), so rank 1 skips the step -- including ``clip_grad_norm`` -- and goes on to receive step 1's
activations, while rank 0 waits in the clip-norm all-reduce: rank 0 in ``all_reduce``, rank 1 in ``recv``, until the
20 s timeout.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "buggy"
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
        return found.item() > 0  # BUG

    def clip_grad_norm(self):
        local_sq = torch.stack([p.grad.pow(2).sum() for p in self.params]).sum().reshape(1)
        dist.all_reduce(local_sq, group=self.pp_group)  # WAITS
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
        grad_norm = self.clip_grad_norm()  # WAITS
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
            dist.recv(h_in, src=0)  # WAITS
            h_in.requires_grad_()
            loss = F.mse_loss(stage(h_in), target)
            (loss * fp16_opt.scaler.scale).backward()
            dist.send(h_in.grad, dst=0)
        stepped, norm = fp16_opt.step()  # WAITS
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
    run_stage(rank, stage, fp16_opt)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
