# From a velog post (stall at dist.barrier after validation on rank 0): DDP model with BatchNorm
# evaluated on rank 0 only; DDP's forward broadcasts buffers, so rank 0 makes a collective the others do not.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def validation(model):
    with torch.no_grad():
        for _ in range(2):
            out = model(torch.randn(4, 8))
    return out.sum().item()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _epoch in range(2):
        loss = model(torch.randn(4, 8)).sum()
        loss.backward()
        opt.step()
        if dist.get_rank() == 0:
            validation(model)
            torch.save(model.module.state_dict(), "ckpt_p02.pt")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
