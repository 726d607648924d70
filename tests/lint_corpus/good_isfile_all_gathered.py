# detectron2's DetectionCheckpointer.load (detectron2/checkpoint/detection_checkpoint.py): every rank checks
# os.path.isfile, the answers are all-gathered (comm.all_gather), and the decisions are taken on the gathered
# list, which is the same on every rank; a rank missing the file only makes every rank re-broadcast.
# expect: none
import os

import torch.distributed as dist
from detectron2.utils import comm


def broadcast_parameters(model):
    for tensor in model.state_dict().values():
        dist.broadcast(tensor, src=0)


def load(model, path):
    has_file = os.path.isfile(path)
    all_has_file = comm.all_gather(has_file)
    if not all_has_file[0]:
        raise OSError(f"File {path} not found on main worker.")
    need_sync = not all(all_has_file)
    if need_sync:
        broadcast_parameters(model)
    return has_file
