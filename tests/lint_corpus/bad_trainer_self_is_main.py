# A Trainer class: the main process saves through a method that synchronises,
# and gathers metrics under self.is_main.
# expect: 30 hidden-collective self.save -> dist.barrier
# expect: 33 branch dist.all_gather_object
import torch
import torch.distributed as dist


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.is_main = dist.get_rank() == 0

    def save(self, path):
        torch.save(self.model.state_dict(), path)
        dist.barrier()

    def train_step(self, x, y):
        self.optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            losses = [self.train_step(x, y) for x, y in loader]
            if self.is_main:
                self.save(f"epoch_{epoch}.pt")
                print(f"epoch {epoch}: {sum(losses) / len(losses):.4f}")
                all_losses = [None] * dist.get_world_size()
                dist.all_gather_object(all_losses, losses)
