# Reduced from pytorch/vision references/classification/train.py (evaluate, the epoch loop's checkpoint) with
# references/classification/utils.py (reduce_across_processes, is_main_process, save_on_master,
# MetricLogger.synchronize_between_processes as an all_reduce) inlined. Kept: every rank evaluates and reduces,
# save_on_master, the barrier-free epoch loop; dropped: transforms, EMA, mixup.
import os
import torch
import torch.distributed as dist


def is_dist_avail_and_initialized():
    return dist.is_available() and dist.is_initialized()


def get_rank():
    return dist.get_rank() if is_dist_avail_and_initialized() else 0


def is_main_process():
    return get_rank() == 0


def save_on_master(*args, **kwargs):
    if is_main_process():
        torch.save(*args, **kwargs)


def reduce_across_processes(val):
    if not is_dist_avail_and_initialized():
        return torch.tensor(val)
    t = torch.tensor(val, device="cpu")
    dist.barrier()
    dist.all_reduce(t)
    return t


def evaluate(model, criterion, data_loader):
    model.eval()
    num_processed_samples = 0
    correct = 0
    with torch.inference_mode():
        for image, target in data_loader:
            output = model(image)
            correct += (output.argmax(1) == target).sum().item()
            num_processed_samples += image.shape[0]
    num_processed_samples = reduce_across_processes(num_processed_samples)
    correct = reduce_across_processes(correct)
    return correct / num_processed_samples


def main(args, model, criterion, optimizer, data_loader, data_loader_test, train_sampler):
    for epoch in range(args.start_epoch, args.epochs):
        train_sampler.set_epoch(epoch)
        for image, target in data_loader:
            loss = criterion(model(image), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        evaluate(model, criterion, data_loader_test)
        if args.output_dir:
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}
            save_on_master(checkpoint, os.path.join(args.output_dir, f"model_{epoch}.pth"))
            save_on_master(checkpoint, os.path.join(args.output_dir, "checkpoint.pth"))
