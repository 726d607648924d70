# Framework calls that issue collectives inside, reached on some ranks only (issue 12's real bugs):
# Accelerate save_state (a barrier), Lightning's self.all_gather and trainer.save_checkpoint, DeepSpeed's
# save_checkpoint, detectron2's comm.synchronize, mmengine's collect_results, HF Trainer.evaluate.
# expect: 24 branch accelerator.save_state
# expect: 30 branch self.all_gather
# expect: 35 branch trainer.save_checkpoint
# expect: 40 branch model_engine.save_checkpoint
# expect: 45 branch comm.synchronize
# expect: 51 branch collect_results
# expect: 56 branch trainer.evaluate
# expect: 62 early-exit fabric.barrier
from accelerate import Accelerator
from detectron2.utils import comm
from lightning.pytorch import LightningModule
from mmengine.dist import collect_results, get_dist_info


class Base(LightningModule):
    pass


def save(accelerator: Accelerator):
    if accelerator.is_main_process:
        accelerator.save_state()


class Model(Base):
    def on_validation_epoch_end(self):
        if self.trainer.is_global_zero:
            self.all_gather(self.outputs)


def on_train_epoch_end(trainer):
    if trainer.is_global_zero:
        trainer.save_checkpoint("last.ckpt")


def ds_save(model_engine, step):
    if model_engine.global_rank == 0 and step % 10 == 0:
        model_engine.save_checkpoint("ckpt")


def d2_eval():
    if comm.is_main_process():
        comm.synchronize()


def mm_eval(results):
    rank, _ = get_dist_info()
    if rank == 0:
        return collect_results(results, len(results))


def hf_eval(trainer):
    if trainer.is_world_process_zero():
        trainer.evaluate()


def make_dataset(fabric):
    if fabric.global_rank == 0:
        return []
    fabric.barrier()
