"""capi's end-of-eval checkpoint cleanup: every rank lists and stats the checkpoints, rank 0 deletes them.

Source: facebookresearch/capi issue #9 ("File system race condition when deleting checkpoints after an eval
finished", 2025) and the commit that closes it, 1b8c704 "Clean up checkpoints on rank 0 only, closes #9";
modelled on ``eval_classification.py`` ``eval_model`` (the "Remove all but the last ckpt" block after the test
evaluations) and ``utils.py`` ``dump_metrics``.

What the item does: two ranks train a linear classifier on tiny in-code features (gradients all-reduced), rank 0
saves ``model_{iteration:07d}.pth`` and re-points the ``last_checkpoint.pth`` symlink after every iteration, the
validation accuracy is all-reduced, and then the finished eval removes all but the newest checkpoint. The shared
output directory is on a network filesystem in the report; here every ``stat`` of a checkpoint costs one round
trip (0.15 s), and rank 1 reaches the cleanup 0.4 s after rank 0 (it frees its share of the test data later;
any skew of that size does).

The bug (as the issue describes it): the listing and the sort by modification time run on every rank, only the
``unlink`` is gated on rank 0. "rank 1 lists the checkpoints, rank 0 deletes them, rank 1 tries to stat the files
to sort them and fails": rank 1 dies with ``FileNotFoundError`` inside the sort key.
"""

import datetime
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

N_ITERS = 8
STAT_ROUND_TRIP = 0.15  # one metadata round trip to the shared filesystem
RANK1_SKEW = 0.4


def shared_output_dir() -> Path:
    """The job's output directory, made by rank 0 and shared with the others (capi's ``cfg.output_dir``)."""
    holder = [tempfile.mkdtemp(prefix="capi_eval_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return Path(holder[0])


def mtime_on_shared_fs(path: Path) -> float:
    time.sleep(STAT_ROUND_TRIP)
    return path.stat().st_mtime


def train_linear_classifier(ckpt_dir: Path) -> torch.nn.Linear:
    rank = dist.get_rank()
    torch.manual_seed(0)
    classifier = torch.nn.Linear(4, 3)
    optimizer = torch.optim.SGD(classifier.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(rank)
    last_ckpt_link = ckpt_dir / "last_checkpoint.pth"
    for iteration in range(N_ITERS):
        features = torch.randn(8, 4, generator=generator)
        labels = torch.randint(0, 3, (8,), generator=generator)
        loss = torch.nn.functional.cross_entropy(classifier(features), labels)
        optimizer.zero_grad()
        loss.backward()
        for param in classifier.parameters():
            dist.all_reduce(param.grad)
            param.grad /= dist.get_world_size()
        optimizer.step()
        if rank == 0:
            ckpt_path = ckpt_dir / f"model_{iteration:07d}.pth"
            torch.save({"classifier": classifier.state_dict(), "iteration": iteration}, ckpt_path)
            last_ckpt_link.unlink(missing_ok=True)
            last_ckpt_link.symlink_to(ckpt_path)
            time.sleep(0.01)  # distinct modification times
    return classifier


def evaluate(classifier: torch.nn.Linear) -> float:
    generator = torch.Generator().manual_seed(100 + dist.get_rank())
    features = torch.randn(16, 4, generator=generator)
    labels = torch.randint(0, 3, (16,), generator=generator)
    with torch.no_grad():
        correct = (classifier(features).argmax(dim=1) == labels).float().sum()
    counts = torch.stack([correct, torch.tensor(16.0)])
    dist.all_reduce(counts)
    return (counts[0] / counts[1]).item()


def eval_model(output_dir: Path) -> dict:
    ckpt_dir = output_dir / "ckpt"
    if dist.get_rank() == 0:
        ckpt_dir.mkdir()
    dist.barrier()
    classifier = train_linear_classifier(ckpt_dir)
    accuracy = evaluate(classifier)
    if dist.get_rank() == 1:
        time.sleep(RANK1_SKEW)
    # Remove all but the last ckpt
    for ckpt in sorted(ckpt_dir.glob("*.pth"), key=mtime_on_shared_fs)[:-1]:  # BUG
        if dist.get_rank() == 0:
            ckpt.unlink()
    return {"val_accuracy": accuracy}


def dump_metrics(results: dict, output_dir: Path) -> None:
    if dist.get_rank() == 0:
        (output_dir / "results_eval_classification.json").write_text(repr(results))


def worker():
    output_dir = shared_output_dir()
    try:
        results = eval_model(output_dir)
        dump_metrics(results, output_dir)
    finally:
        if dist.get_rank() == 0:
            time.sleep(3 * STAT_ROUND_TRIP * N_ITERS)
            shutil.rmtree(output_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
