# Reduced from NVIDIA/Megatron-LM megatron/training/checkpointing.py save_checkpoint (the non-distributed
# torch.save path): data-parallel rank 0 of each model-parallel group writes its shard, a barrier, global rank 0
# writes the tracker file (latest_checkpointed_iteration.txt), a barrier again. mpu replaced by the data-parallel
# rank computed from the global rank. Kept: that order of writes and barriers.
import os
import torch


def get_data_parallel_rank(model_parallel_size):
    return torch.distributed.get_rank() // model_parallel_size


def save_checkpoint(iteration, model, optimizer, save_dir, model_parallel_size):
    checkpoint_name = os.path.join(save_dir, f"iter_{iteration:07d}", f"mp_rank_{torch.distributed.get_rank() % model_parallel_size:02d}", "model_optim_rng.pt")
    if not torch.distributed.is_initialized() or get_data_parallel_rank(model_parallel_size) == 0:
        state_dict = {"iteration": iteration, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
        os.makedirs(os.path.dirname(checkpoint_name), exist_ok=True)
        torch.save(state_dict, checkpoint_name)
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
    if not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0:
        tracker_filename = os.path.join(save_dir, "latest_checkpointed_iteration.txt")
        with open(tracker_filename, "w") as f:
            f.write(str(iteration))
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
