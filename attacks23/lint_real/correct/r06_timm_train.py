# Reproduction (shortened) of huggingface/pytorch-image-models train.py @ aa4b5850 with the helpers it imports
# from timm/utils/distributed.py (reduce_tensor, distribute_bn, is_primary) inlined: a CheckpointSaver made on
# the primary rank only, BatchNorm statistics distributed after each epoch, losses all-reduced at log steps and
# at the end of the epoch, validation metrics all-reduced per batch. Correct as published.
import argparse
import logging
import os
from collections import OrderedDict

import torch
import torch.distributed as dist
from torch import distributed

_logger = logging.getLogger("train")


def reduce_tensor(tensor, n):
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    rt /= n
    return rt


def distribute_bn(model, world_size, reduce=False):
    for bn_name, bn_buf in model.named_buffers(recurse=True):
        if ("running_mean" in bn_name) or ("running_var" in bn_name):
            if reduce:
                torch.distributed.all_reduce(bn_buf, op=dist.ReduceOp.SUM)
                bn_buf /= float(world_size)
            else:
                torch.distributed.broadcast(bn_buf, 0)


def is_primary(args):
    return args.rank == 0


class CheckpointSaver:
    def __init__(self, model, optimizer, checkpoint_dir):
        self.model, self.optimizer, self.checkpoint_dir = model, optimizer, checkpoint_dir

    def save_checkpoint(self, epoch, metric=None):
        torch.save({"epoch": epoch, "state_dict": self.model.state_dict()},
                   os.path.join(self.checkpoint_dir, "last.pth.tar"))
        return metric, epoch


def main():
    args = parser.parse_args()
    args.world_size = int(os.environ.get("WORLD_SIZE", 1))
    args.rank = int(os.environ.get("RANK", 0))
    args.distributed = args.world_size > 1
    if args.distributed:
        distributed.init_process_group(backend="nccl")
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.BatchNorm1d(10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    dataset = torch.utils.data.TensorDataset(torch.randn(1000, 10), torch.randint(0, 10, (1000,)))
    sampler = torch.utils.data.distributed.DistributedSampler(dataset) if args.distributed else None
    loader_train = torch.utils.data.DataLoader(dataset, batch_size=32, sampler=sampler)
    loader_eval = torch.utils.data.DataLoader(dataset, batch_size=32, sampler=sampler)
    loss_fn = torch.nn.CrossEntropyLoss()

    saver = None
    output_dir = None
    if is_primary(args):
        output_dir = args.output
        saver = CheckpointSaver(model=model, optimizer=optimizer, checkpoint_dir=output_dir)

    for epoch in range(args.epochs):
        if args.distributed and hasattr(loader_train.sampler, "set_epoch"):
            loader_train.sampler.set_epoch(epoch)
        train_metrics = train_one_epoch(epoch, model, loader_train, optimizer, loss_fn, args)
        if args.distributed and args.dist_bn in ("broadcast", "reduce"):
            if is_primary(args):
                _logger.info("Distributing BatchNorm running means and vars")
            distribute_bn(model, args.world_size, args.dist_bn == "reduce")
        eval_metrics = validate(model, loader_eval, loss_fn, args)
        if saver is not None:
            saver.save_checkpoint(epoch, metric=eval_metrics["top1"])
    if args.distributed:
        torch.distributed.destroy_process_group()
    return train_metrics


def train_one_epoch(epoch, model, loader, optimizer, loss_fn, args):
    model.train()
    last_batch_idx = len(loader) - 1
    losses_sum, losses_count = 0.0, 0
    for batch_idx, (input, target) in enumerate(loader):
        last_batch = batch_idx == last_batch_idx
        loss = loss_fn(model(input), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses_sum += loss.item()
        losses_count += 1
        if batch_idx % args.log_interval == 0 or last_batch:
            loss_now = loss.item()
            if args.distributed:
                loss_now = reduce_tensor(loss.new([loss_now]), args.world_size).item()
            if is_primary(args):
                _logger.info(f"Train: {epoch} [{batch_idx}/{last_batch_idx}] Loss: {loss_now:#.3g}")
    loss_avg = losses_sum / max(losses_count, 1)
    if args.distributed:
        loss_avg = torch.tensor([loss_avg], dtype=torch.float32)
        loss_avg = reduce_tensor(loss_avg, args.world_size).item()
    return OrderedDict([("loss", loss_avg)])


def validate(model, loader, loss_fn, args):
    model.eval()
    last_idx = len(loader) - 1
    top1 = 0.0
    with torch.no_grad():
        for batch_idx, (input, target) in enumerate(loader):
            last_batch = batch_idx == last_idx
            output = model(input)
            loss = loss_fn(output, target)
            acc1 = (output.argmax(1) == target).float().mean() * 100
            if args.distributed:
                reduced_loss = reduce_tensor(loss.data, args.world_size)
                acc1 = reduce_tensor(acc1, args.world_size)
            else:
                reduced_loss = loss.data
            top1 = acc1.item()
            if is_primary(args) and (last_batch or batch_idx % args.log_interval == 0):
                _logger.info(f"Test: [{batch_idx}/{last_idx}] Loss: {reduced_loss.item():>7.3f} Acc@1: {top1:>7.3f}")
    return OrderedDict([("top1", top1)])


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=300)
parser.add_argument("--dist-bn", type=str, default="reduce")
parser.add_argument("--log-interval", type=int, default=50)
parser.add_argument("--output", default="output")

if __name__ == "__main__":
    main()
