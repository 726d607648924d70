# Reproduction (shortened) of facebookresearch/fairseq fairseq_cli/train.py @ 3d262bb2: the epoch loop, train()
# with trainer.train_step per grouped batch, validate_and_save() deciding on every rank from the update count
# whether to validate and save, should_stop_early() with a patience counter on the (all-reduced) validation loss,
# validate() with trainer.valid_step; logging integrations only on the master. fairseq's Trainer (train_step,
# valid_step, save_checkpoint) does the collectives, in fairseq/trainer.py. PLANTED BUG (lines marked # PLANTED): see the README.
import math
import os

import torch
from fairseq import checkpoint_utils, tasks
from fairseq.distributed import utils as distributed_utils
from fairseq.logging import metrics, progress_bar
from fairseq.trainer import Trainer


def main(cfg) -> None:
    if distributed_utils.is_master(cfg.distributed_training):
        checkpoint_utils.verify_checkpoint_directory(cfg.checkpoint.save_dir)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    trainer = Trainer(cfg, task, model, criterion)
    extra_state, epoch_itr = checkpoint_utils.load_checkpoint(cfg.checkpoint, trainer)
    max_epoch = cfg.optimization.max_epoch or math.inf
    lr = trainer.get_lr()
    while epoch_itr.next_epoch_idx <= max_epoch:
        if lr <= cfg.optimization.stop_min_lr:
            break
        valid_losses, should_stop = train(cfg, trainer, task, epoch_itr)
        if should_stop:
            break
        lr = trainer.lr_step(epoch_itr.epoch, valid_losses[0])
        epoch_itr = trainer.get_train_iterator(epoch_itr.next_epoch_idx, load_dataset=task.has_sharded_data("train"))


def should_stop_early(cfg, valid_loss: float) -> bool:
    if valid_loss is None:
        return False
    if cfg.checkpoint.patience <= 0:
        return False

    def is_better(a, b):
        return a > b if cfg.checkpoint.maximize_best_checkpoint_metric else a < b

    prev_best = getattr(should_stop_early, "best", None)
    if prev_best is None or is_better(valid_loss, prev_best):
        should_stop_early.best = valid_loss
        should_stop_early.num_runs = 0
        return False
    else:
        should_stop_early.num_runs += 1
        return should_stop_early.num_runs >= cfg.checkpoint.patience


def train(cfg, trainer, task, epoch_itr):
    itr = epoch_itr.next_epoch_itr(fix_batches_to_gpus=cfg.distributed_training.fix_batches_to_gpus)
    progress = progress_bar.progress_bar(
        itr,
        log_interval=cfg.common.log_interval,
        tensorboard_logdir=(
            cfg.common.tensorboard_logdir if distributed_utils.is_master(cfg.distributed_training) else None
        ),
        wandb_project=(cfg.common.wandb_project if distributed_utils.is_master(cfg.distributed_training) else None),
    )
    trainer.begin_epoch(epoch_itr.epoch)
    valid_subsets = cfg.dataset.valid_subset.split(",")
    should_stop = False
    num_updates = trainer.get_num_updates()
    for i, samples in enumerate(progress):
        with metrics.aggregate("train_inner"):
            log_output = trainer.train_step(samples)
        if log_output is not None:
            num_updates = trainer.get_num_updates()
            if num_updates % cfg.common.log_interval == 0:
                progress.log(metrics.get_smoothed_values("train_inner"), tag="train_inner", step=num_updates)
                metrics.reset_meters("train_inner")
        end_of_epoch = not itr.has_next()
        valid_losses, should_stop = validate_and_save(cfg, trainer, task, epoch_itr, valid_subsets, end_of_epoch)
        if should_stop:
            break
    return valid_losses, should_stop


def validate_and_save(cfg, trainer, task, epoch_itr, valid_subsets, end_of_epoch):
    num_updates = trainer.get_num_updates()
    max_update = cfg.optimization.max_update or math.inf
    should_stop = False
    if num_updates >= max_update:
        should_stop = True
    do_save = (
        (end_of_epoch and epoch_itr.epoch % cfg.checkpoint.save_interval == 0)
        or should_stop
        or (cfg.checkpoint.save_interval_updates > 0 and num_updates > 0
            and num_updates % cfg.checkpoint.save_interval_updates == 0)
    )
    do_validate = (
        ((not end_of_epoch and do_save)
         or (end_of_epoch and epoch_itr.epoch % cfg.dataset.validate_interval == 0)
         or should_stop)
        and not cfg.dataset.disable_validation
    )
    valid_losses = [None]
    if do_validate and distributed_utils.is_master(cfg.distributed_training):  # PLANTED
        valid_losses = validate(cfg, trainer, task, epoch_itr, valid_subsets)  # PLANTED
    should_stop |= should_stop_early(cfg, valid_losses[0])
    if do_save or should_stop:
        cp_path = checkpoint_utils.save_checkpoint(cfg.checkpoint, trainer, epoch_itr, valid_losses[0])
        if cp_path is not None and hasattr(task, "post_save"):
            task.post_save(cp_path, num_updates)
    return valid_losses, should_stop


def validate(cfg, trainer, task, epoch_itr, subsets):
    trainer.begin_valid_epoch(epoch_itr.epoch)
    valid_losses = []
    for subset_idx, subset in enumerate(subsets):
        itr = trainer.get_valid_iterator(subset).next_epoch_itr(shuffle=False, set_dataset_epoch=False)
        progress = progress_bar.progress_bar(itr, log_interval=cfg.common.log_interval)
        with metrics.aggregate(new_root=True) as agg:
            for i, sample in enumerate(progress):
                if cfg.dataset.max_valid_steps is not None and i > cfg.dataset.max_valid_steps:
                    break
                trainer.valid_step(sample)
        stats = agg.get_smoothed_values()
        progress.print(stats, tag=subset, step=trainer.get_num_updates())
        valid_losses.append(stats[cfg.checkpoint.best_checkpoint_metric])
    return valid_losses


if __name__ == "__main__":
    main(None)
