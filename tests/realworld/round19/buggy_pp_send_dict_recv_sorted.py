"""A hand-written two-stage pipeline that sends a dict of activations in the dict's order and receives them in
sorted-name order.

Models: DeepSpeed ``runtime/pipe/engine.py`` (``_exec_send_activations`` sends a tuple of activations one
``p2p.send`` per element, ``_exec_recv_activations`` receives into buffers allocated from ``_recv_tensor_meta`` in the
same order; a boolean attention mask travels as the last element), Megatron-LM ``p2p_communication.py`` (receive
buffers shaped from a known ``tensor_shape``), and the dict-of-tensors stage outputs of hand-written pipelines
(``send_dict`` / ``recv_dict``). gloo pairs the point-to-point messages between two ranks in the order they are
posted, so both sides must agree on the order of the names.

What it does: stage 0 (rank 0) embeds token ids and returns ``{"hidden_states": [B, S, D], "attention_mask": [B, S]}``;
``send_forward`` sends the dict's values in the dict's order. Stage 1 (rank 1) allocates one buffer per name from the
shapes it knows, receives, computes a masked regression loss, and sends the gradient of ``hidden_states`` back;
stage 0 backpropagates it. Three micro-batches, one SGD step each.

The bug: ``recv_forward`` iterates ``sorted(shapes)``, so it posts its first receive for ``attention_mask`` while
stage 0 sends ``hidden_states`` first: 768 bytes arrive for a 96-byte buffer and gloo aborts rank 1 in ``dist.recv``;
rank 0 loses its peer while it waits in the point-to-point calls of its first micro-batch.
"""

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

B, S, D, VOCAB = 4, 6, 8, 20


class FirstStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.block = nn.Sequential(nn.Linear(D, D), nn.GELU())

    def forward(self, tokens, lengths):
        positions = torch.arange(S).unsqueeze(0)
        mask = (positions < lengths.unsqueeze(1)).float()
        return {"hidden_states": self.block(self.embed(tokens)), "attention_mask": mask}


class LastStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(D, 1)

    def forward(self, hidden_states, attention_mask, targets):
        pred = self.head(hidden_states).squeeze(-1)
        return (((pred - targets) ** 2) * attention_mask).sum() / attention_mask.sum()


def send_forward(outputs, dst):
    for name, tensor in outputs.items():
        dist.send(tensor.detach().contiguous(), dst)  # WAITS


def recv_forward(shapes, src):
    received = {}
    for name in sorted(shapes):  # BUG
        buf = torch.empty(shapes[name])
        dist.recv(buf, src)  # WAITS
        received[name] = buf
    return received


def micro_batch(i):
    g = torch.Generator().manual_seed(100 + i)
    tokens = torch.randint(0, VOCAB, (B, S), generator=g)
    lengths = torch.randint(2, S + 1, (B,), generator=g)
    targets = torch.randn(B, S, generator=g)
    return tokens, lengths, targets


def run_first_stage():
    torch.manual_seed(0)
    stage = FirstStage()
    opt = torch.optim.SGD(stage.parameters(), lr=0.1)
    for i in range(3):
        tokens, lengths, _ = micro_batch(i)
        outputs = stage(tokens, lengths)
        send_forward(outputs, dst=1)  # WAITS
        grad = torch.empty(B, S, D)
        dist.recv(grad, src=1)
        opt.zero_grad()
        outputs["hidden_states"].backward(grad)
        opt.step()


def run_last_stage():
    torch.manual_seed(1)
    stage = LastStage()
    opt = torch.optim.SGD(stage.parameters(), lr=0.1)
    shapes = {"hidden_states": (B, S, D), "attention_mask": (B, S)}
    for i in range(3):
        _, _, targets = micro_batch(i)
        inputs = recv_forward(shapes, src=0)  # WAITS
        hidden = inputs["hidden_states"].requires_grad_()
        loss = stage(hidden, inputs["attention_mask"], targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        dist.send(hidden.grad.contiguous(), dst=0)
        print(f"micro-batch {i}: loss {loss.item():.4f}", flush=True)


def worker():
    if dist.get_rank() == 0:
        run_first_stage()  # WAITS
    else:
        run_last_stage()  # WAITS
    dist.barrier()


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
