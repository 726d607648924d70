"""A hand-written two-stage pipeline that sends a dict of activations and receives it, both sides walking one
shared tuple of names.

Models: DeepSpeed ``runtime/pipe/engine.py`` (``_exec_send_activations`` / ``_exec_recv_activations``: one ``p2p.send``
/ ``p2p.recv`` per element of a tuple of activations, in the tuple's order; the attention mask travels with the
hidden states), Megatron-LM ``p2p_communication.py`` (receive buffers shaped from a known ``tensor_shape``).

What it does: stage 0 (rank 0) embeds token ids and returns ``{"hidden_states": [B, S, D], "attention_mask": [B, S]}``;
``send_forward`` sends the values in ``WIRE_ORDER``; stage 1 (rank 1) allocates a buffer per name and receives in
``WIRE_ORDER``, computes a masked regression loss and sends the gradient of ``hidden_states`` back; stage 0
backpropagates it. Three micro-batches. Correct: the two stages run different code but post their point-to-point
calls in the same order, with buffers of the sizes sent.
"""

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

B, S, D, VOCAB = 4, 6, 8, 20
#: the wire order of the stage outputs, shared by the sender and the receiver
WIRE_ORDER = ("hidden_states", "attention_mask")


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
    for name in WIRE_ORDER:
        dist.send(outputs[name].detach().contiguous(), dst)


def recv_forward(shapes, src):
    received = {}
    for name in WIRE_ORDER:
        buf = torch.empty(shapes[name])
        dist.recv(buf, src)
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
        send_forward(outputs, dst=1)
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
        inputs = recv_forward(shapes, src=0)
        hidden = inputs["hidden_states"].requires_grad_()
        loss = stage(hidden, inputs["attention_mask"], targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        dist.send(hidden.grad.contiguous(), dst=0)
        print(f"micro-batch {i}: loss {loss.item():.4f}", flush=True)


def worker():
    if dist.get_rank() == 0:
        run_first_stage()
    else:
        run_last_stage()
    dist.barrier()


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
