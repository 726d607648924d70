"""Two-stage pipeline that sends the activation shape with every micro-batch (correct).

Models: NVIDIA/Megatron-LM ``core/pipeline_parallel/p2p_communication.py`` (``_communicate`` with
``variable_seq_lengths``: ``_communicate_shapes`` exchanges the shape before each tensor; otherwise the receiver
allocates the fixed ``tensor_shape``), deepspeedai/DeepSpeed issue #3195 ("When the input sequences are variable
length, the tensor between pipeline stage is cut to a shape same as the first batch data's shape"), pytorch/
torchtitan issue #431 and pytorch issue #159942 (``PipelineStage`` infers shapes once and assumes them static),
transformers ``DataCollatorWithPadding`` (pad to the longest sequence of the batch).

Stage 0 embeds a batch padded to its own longest sequence and sends the hidden states to stage 1, which computes
the loss and sends the gradient back. Because the sequence length changes from batch to batch, ``send_forward``
sends the 3-int shape before every tensor (``variable_seq_lengths=True``) and ``recv_forward`` allocates from it.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB, HID, BATCH = 30, 8, 4
LENGTHS = [3, 5, 4, 5, 8, 6, 7, 3, 6, 4, 5, 7]  # per example; batches of 4 pad to 5, 8, 7
VARIABLE_SEQ_LENGTHS = True


def collate_pad_longest(examples):
    longest = max(len(e) for e in examples)
    ids = torch.zeros(len(examples), longest, dtype=torch.long)
    for i, e in enumerate(examples):
        ids[i, : len(e)] = e
    return ids


def batches():
    g = torch.Generator().manual_seed(0)
    examples = [torch.randint(1, VOCAB, (n,), generator=g) for n in LENGTHS]
    for i in range(0, len(examples), BATCH):
        yield collate_pad_longest(examples[i : i + BATCH])


class P2P:
    def __init__(self, variable_seq_lengths):
        self.variable_seq_lengths = variable_seq_lengths
        self.tensor_shape = None

    def send_forward(self, h):
        if self.variable_seq_lengths or self.tensor_shape is None:
            dist.send(torch.tensor(h.shape, dtype=torch.long), dst=1)
            self.tensor_shape = tuple(h.shape)
        dist.send(h.contiguous(), dst=1)

    def recv_forward(self):
        if self.variable_seq_lengths or self.tensor_shape is None:
            shape = torch.empty(3, dtype=torch.long)
            dist.recv(shape, src=0)
            self.tensor_shape = tuple(shape.tolist())
        buf = torch.empty(self.tensor_shape)
        dist.recv(buf, src=0)
        return buf.requires_grad_()

    def send_backward(self, grad):
        dist.send(grad.contiguous(), dst=0)

    def recv_backward(self, like):
        grad = torch.empty_like(like)
        dist.recv(grad, src=1)
        return grad


def worker():
    rank = dist.get_rank()
    torch.manual_seed(rank)
    p2p = P2P(VARIABLE_SEQ_LENGTHS)
    if rank == 0:
        stage = nn.Embedding(VOCAB, HID)
    else:
        stage = nn.Sequential(nn.Linear(HID, HID), nn.Tanh(), nn.Linear(HID, VOCAB))
    opt = torch.optim.SGD(stage.parameters(), lr=0.1)
    for step, ids in enumerate(batches()):
        opt.zero_grad()
        if rank == 0:
            h = stage(ids)
            p2p.send_forward(h.detach())
            h.backward(p2p.recv_backward(h))
        else:
            h = p2p.recv_forward()
            logits = stage(h)
            # a toy objective that needs no labels from stage 0: predict a fixed token everywhere
            loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), torch.ones(h.shape[0] * h.shape[1], dtype=torch.long))
            loss.backward()
            p2p.send_backward(h.grad)
            print(f"step {step} seq_len {h.shape[1]} loss {loss.item():.4f}", flush=True)
        opt.step()
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
