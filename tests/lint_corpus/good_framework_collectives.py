# The same framework calls made on every rank, with only printing and plain file writes on rank 0.
# expect: none
from accelerate import Accelerator
from detectron2.utils import comm
from mmengine.dist import collect_results, get_dist_info


def save(accelerator: Accelerator, model):
    accelerator.save_state()
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        accelerator.save(accelerator.unwrap_model(model).state_dict(), "model.bin")
    if accelerator.check_trigger():
        return


def d2_eval(predictions):
    comm.synchronize()
    gathered = comm.gather(predictions, dst=0)
    if not comm.is_main_process():
        return {}
    return {"n": len(gathered)}


def mm_eval(results):
    rank, world_size = get_dist_info()
    gathered = collect_results(results, len(results) * world_size)
    if rank == 0:
        print(len(gathered))
