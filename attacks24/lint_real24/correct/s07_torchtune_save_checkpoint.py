# Reduced from pytorch/torchtune recipes/full_finetune_distributed.py FullFinetuneRecipeDistributed.save_checkpoint
# with torchtune/training/_distributed.py gather_cpu_state_dict inlined: every rank gathers the sharded (DTensor)
# state dict (full_tensor() is an all-gather), rank 0 alone writes it, then a barrier. Kept: that structure.
import torch.distributed as dist


def gather_cpu_state_dict(model, is_rank_zero):
    cpu_state_dict = {}
    sharded_sd = model.state_dict()
    for param_name, sharded_param in sharded_sd.items():
        full_param = sharded_param.full_tensor()
        if is_rank_zero:
            cpu_state_dict[param_name] = full_param.cpu()
        else:
            del full_param
    return cpu_state_dict


class FullFinetuneRecipeDistributed:
    def __init__(self, model, checkpointer):
        self._model = model
        self._checkpointer = checkpointer
        self._is_rank_zero = dist.get_rank() == 0

    def save_checkpoint(self, epoch):
        checkpoint_dict = {}
        cpu_state_dict = gather_cpu_state_dict(self._model, self._is_rank_zero)
        if self._is_rank_zero:
            checkpoint_dict.update({"model": cpu_state_dict})
            self._checkpointer.save_checkpoint(checkpoint_dict, epoch=epoch)
        dist.barrier()
