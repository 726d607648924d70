# torch.distributed.checkpoint.save is itself a collective: every rank must call
# it (each writes its own shards). Guarding it like torch.save hangs.
# expect: 15 branch dcp.save
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def checkpoint(model, optimizer, step, directory):
    state = {"model": model.state_dict(), "optim": optimizer.state_dict()}
    if dist.get_rank() == 0:
        print(f"saving step {step}")
    dist.barrier()

    if dist.get_rank() == 0:
        dcp.save(state, checkpoint_id=f"{directory}/step_{step}")
