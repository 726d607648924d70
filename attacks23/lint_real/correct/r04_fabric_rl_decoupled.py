# Reproduction (shortened) of Lightning-AI/pytorch-lightning examples/fabric/reinforcement_learning/
# train_fabric_decoupled.py @ 7f0c3436cd: rank 0 is the player (collects experience), ranks 1..n-1 the trainers,
# whose DDP (Fabric with DDPStrategy(process_group=optimization_pg)) runs on a group without rank 0; the player
# and the trainers meet in broadcasts and scatters of the world group, rank 1 and the player in a 2-rank group.
# Correct as published.
import argparse

import torch
from lightning.fabric import Fabric
from lightning.fabric.plugins.collectives import TorchCollective
from lightning.fabric.strategies import DDPStrategy
from torchmetrics import MeanMetric


class Agent(torch.nn.Module):
    def __init__(self, process_group=None):
        super().__init__()
        self.net = torch.nn.Linear(4, 2)
        self.avg_pg_loss = MeanMetric(process_group=process_group)

    def training_step(self, batch):
        loss = self.net(batch["obs"]).sum()
        self.avg_pg_loss.update(loss)
        return loss

    def reset_metrics(self):
        self.avg_pg_loss.reset()


def player(args, world_collective, player_trainer_collective):
    fabric = Fabric(accelerator="cpu")
    agent = Agent()
    flattened_parameters = torch.empty_like(torch.nn.utils.parameters_to_vector(agent.parameters()))
    player_trainer_collective.broadcast(flattened_parameters, src=1)
    num_updates = args.total_timesteps // args.num_steps
    update_t = torch.tensor([num_updates], dtype=torch.float32)
    world_collective.broadcast(update_t, src=0)
    for _ in range(1, num_updates + 1):
        local_data = {"obs": torch.randn(args.num_steps, 4)}
        world_collective.broadcast_object_list([local_data], src=0)
        metrics = [None]
        player_trainer_collective.broadcast_object_list(metrics, src=1)
        player_trainer_collective.broadcast(flattened_parameters, src=1)
        torch.nn.utils.vector_to_parameters(flattened_parameters, agent.parameters())
        fabric.print(metrics[0])
    world_collective.broadcast_object_list([-1], src=0)


def trainer(args, world_collective, player_trainer_collective, optimization_pg):
    global_rank = world_collective.rank
    fabric = Fabric(strategy=DDPStrategy(process_group=optimization_pg), accelerator="cpu")
    agent = Agent(process_group=optimization_pg)
    optimizer = torch.optim.Adam(agent.parameters())
    agent, optimizer = fabric.setup(agent, optimizer)

    # Send weights to rank-0, a.k.a. the player
    if global_rank == 1:
        player_trainer_collective.broadcast(torch.nn.utils.parameters_to_vector(agent.parameters()), src=1)

    num_updates = torch.zeros(1)
    world_collective.broadcast(num_updates, src=0)
    while True:
        data = [None]
        world_collective.broadcast_object_list(data, src=0)
        data = data[0]
        if data == -1:
            return
        for epoch in range(args.update_epochs):
            loss = agent.training_step(data)
            optimizer.zero_grad(set_to_none=True)
            fabric.backward(loss)
            optimizer.step()
        # Sync metrics
        avg_pg_loss = agent.avg_pg_loss.compute()
        agent.reset_metrics()
        # Send updated weights to the player
        if global_rank == 1:
            metrics = {"Loss/policy_loss": avg_pg_loss}
            player_trainer_collective.broadcast_object_list([metrics], src=1)
            player_trainer_collective.broadcast(torch.nn.utils.parameters_to_vector(agent.parameters()), src=1)


def main(args):
    world_collective = TorchCollective()
    player_trainer_collective = TorchCollective()
    world_collective.setup(backend="gloo")
    world_collective.create_group()
    global_rank = world_collective.rank
    player_trainer_collective.create_group(ranks=[0, 1])
    optimization_pg = world_collective.new_group(ranks=list(range(1, world_collective.world_size)))
    if global_rank == 0:
        player(args, world_collective, player_trainer_collective)
    else:
        trainer(args, world_collective, player_trainer_collective, optimization_pg)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--total-timesteps", type=int, default=2**16)
    parser.add_argument("--num-steps", type=int, default=128)
    parser.add_argument("--update-epochs", type=int, default=10)
    main(parser.parse_args())
