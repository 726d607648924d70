# Evaluation runs on rank 0 only, but evaluate() averages the loss across ranks.
# expect: 31 hidden-collective evaluate -> reduce_mean -> dist.all_reduce
import torch
import torch.distributed as dist


def reduce_mean(value):
    t = torch.tensor([value], dtype=torch.float32)
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


@torch.no_grad()
def evaluate(model, loader):
    total, count = 0.0, 0
    for x, y in loader:
        total += torch.nn.functional.mse_loss(model(x), y, reduction="sum").item()
        count += len(x)
    return reduce_mean(total / count)


def is_main_process():
    return dist.get_rank() == 0


def fit(model, train_step, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        for batch in train_loader:
            train_step(model, batch)
        if is_main_process():
            val_loss = evaluate(model, val_loader)
            print(f"epoch {epoch}: val {val_loss:.4f}")
