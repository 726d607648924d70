"""NVIDIA NeMo ASR, RNN-T with ``fuse_loss_wer``: the joint splits each batch into sub-batches of ``fused_batch_size``
and calls the WER metric's ``compute()`` -- a synced, cross-rank gather of its states -- once per sub-batch; during
validation the sync is not suppressed, and the number of sub-batches depends on the local batch size.

Models: NVIDIA-NeMo/Speech issue #16003 ("fuse_loss_wer=true deadlocks multi-GPU validation when
validation_ds.batch_size > fused_batch_size": "`RNNTJoint.forward` splits each validation batch into multiple
sub-batches and calls `self.wer.compute()` for every sub-batch ... Since the number of sub-batches depends on the local
batch size, different ranks can execute a different number of `wer.compute()` calls. Because `wer.compute()` performs
a synchronized collective (all_gather), the mismatched number of synchronization calls across ranks causes a deadlock";
2 GPUs, batches of 16 and 4 samples, ``fused_batch_size=2``: 8 and 2 sub-batches), PR #16029 (the fix: drop the
``if self.training:`` guard around the sync suppression, so the metric is reduced once, at epoch level) and the earlier
PR #4348 (the same hang in training with fully randomized bucketing). Code modelled (written here, not copied):
``nemo/collections/asr/modules/rnnt.py`` ``RNNTJoint.forward`` (the fused loop, ``self.wer.update`` /
``self.wer.compute()`` / ``self.wer.reset()`` per sub-batch, ``_to_sync`` switched off only when ``self.training``),
``EncDecRNNTModel.training_step`` / ``validation_step`` / ``multi_validation_epoch_end`` (``wer_num`` and
``wer_denom`` summed and logged), torchmetrics ``Metric.compute`` syncing its states with an all-gather before
computing. Stand-ins: a tiny encoder / prediction net / joint and a frame-level cross-entropy in place of the RNN-T
loss; Lightning's DDP training steps; each rank's validation batch (16 samples on rank 0, 4 on rank 1, as in the issue).

The bug: in validation rank 0 makes 8 synced ``compute()`` calls and rank 1 makes 2, then rank 1 reaches the epoch-end
reduction. 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 8
HIDDEN = 16
FRAMES = 6
VAL_BATCH = {0: 16, 1: 4}


def gather_all_tensors(tensor):
    out = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)  # WAITS
    return out


class WER:
    def __init__(self):
        self._to_sync = True
        self.reset()

    def reset(self):
        self.scores = torch.tensor(0.0)
        self.words = torch.tensor(0.0)

    def update(self, predictions, targets):
        self.scores += (predictions != targets).sum().float()
        self.words += targets.numel()

    def compute(self):
        scores, words = self.scores, self.words
        if self._to_sync:
            scores = torch.stack(gather_all_tensors(scores)).sum()  # WAITS
            words = torch.stack(gather_all_tensors(words)).sum()
        return scores / words, scores, words


class RNNTJoint(nn.Module):
    def __init__(self, fused_batch_size):
        super().__init__()
        self.enc_proj = nn.Linear(HIDDEN, HIDDEN)
        self.pred_proj = nn.Linear(HIDDEN, HIDDEN)
        self.joint_net = nn.Linear(HIDDEN, VOCAB)
        self.fused_batch_size = fused_batch_size
        self.wer = WER()

    def joint(self, f, g):
        return self.joint_net(torch.tanh(self.enc_proj(f) + self.pred_proj(g)))

    def forward(self, encoder_outputs, decoder_outputs, transcripts):
        losses, wer_numer, wer_denom = [], [], []
        batch_size = encoder_outputs.shape[0]
        for begin in range(0, batch_size, self.fused_batch_size):
            end = min(begin + self.fused_batch_size, batch_size)
            logits = self.joint(encoder_outputs[begin:end], decoder_outputs[begin:end])
            targets = transcripts[begin:end]
            losses.append(F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1)))
            if self.training:  # BUG
                original_sync = self.wer._to_sync
                self.wer._to_sync = False
            self.wer.update(logits.argmax(dim=-1), targets)
            _, wer_num, wer_den = self.wer.compute()  # WAITS
            self.wer.reset()
            wer_numer.append(wer_num)
            wer_denom.append(wer_den)
            if self.training:
                self.wer._to_sync = original_sync
        return torch.stack(losses).mean(), torch.stack(wer_numer).sum(), torch.stack(wer_denom).sum()


class EncDecRNNTModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(12, HIDDEN)
        self.decoder = nn.Embedding(VOCAB, HIDDEN)
        self.joint = RNNTJoint(fused_batch_size=2)

    def forward(self, signal, transcripts):
        encoded = self.encoder(signal)
        decoded = self.decoder(transcripts.roll(1, dims=1))
        return self.joint(encoded, decoded, transcripts)  # WAITS

    def validation_step(self, batch):
        signal, transcripts = batch
        with torch.no_grad():
            loss, wer_num, wer_denom = self(signal, transcripts)  # WAITS
        return {"val_loss": loss, "val_wer_num": wer_num, "val_wer_denom": wer_denom}

    def multi_validation_epoch_end(self, outputs):
        stats = torch.stack([torch.stack([o["val_loss"] for o in outputs]).mean(),
                             sum(o["val_wer_num"] for o in outputs), sum(o["val_wer_denom"] for o in outputs),
                             torch.tensor(1.0)])
        dist.all_reduce(stats)  # WAITS
        return (stats[0] / stats[3]).item(), (stats[1] / stats[2]).item()


def make_batch(gen, n):
    transcripts = torch.randint(0, VOCAB, (n, FRAMES), generator=gen)
    signal = F.one_hot(transcripts, VOCAB).float().repeat(1, 1, 2)[..., :12] + 0.3 * torch.randn(n, FRAMES, 12,
                                                                                                  generator=gen)
    return signal, transcripts


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = EncDecRNNTModel()
    ddp_model = DDP(model)
    optimizer = torch.optim.Adam(ddp_model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(21 + rank)
    model.train()
    for step in range(3):
        loss, _, _ = ddp_model(*make_batch(gen, 8))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    outputs = [model.validation_step(make_batch(gen, VAL_BATCH[rank]))]  # WAITS
    val_loss, val_wer = model.multi_validation_epoch_end(outputs)  # WAITS
    print(f"[rank {rank}] val_loss {val_loss:.4f} val_wer {val_wer:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
