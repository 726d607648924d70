# The old Hugging Face example scripts: local_rank == -1 means "not distributed",
# otherwise rank 0 downloads while the others wait, then rank 0 releases them.
# expect: none
import torch
from transformers import AutoModel


def load_model(args):
    if args.local_rank not in [-1, 0]:
        torch.distributed.barrier()
    model = AutoModel.from_pretrained(args.model_name)
    if args.local_rank == 0:
        torch.distributed.barrier()
    return model
