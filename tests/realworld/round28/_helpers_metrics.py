"""Helper module of round 28 (not an item): a small torchmetrics-style ``Metric`` whose ``compute()`` caches its
result until the next ``update()`` or ``reset()``, and syncs the states across ranks when it computes.

Written after reading torchmetrics ``metric.py`` (``_wrap_update`` sets ``self._computed = None`` before the
update; ``_wrap_compute`` warns when ``update`` was never called, then ``# return cached value`` -- ``if
self._computed is not None: return self._computed`` -- before it enters ``sync_context``, which all-gathers or
reduces the states on every rank and restores the local ones afterwards; ``reset()`` restores the defaults and
clears ``_computed``). Nothing here is copied.

``MeanAbsoluteError``: sum-reduced states ``sum_abs`` and ``total``; ``compute()`` all-reduces them (one
all-reduce of both) and returns their ratio, or returns the cached value without any collective.
"""

import warnings

import torch
import torch.distributed as dist


class Metric:
    def __init__(self):
        self._defaults = {}
        self._computed = None
        self._update_count = 0

    def add_state(self, name, default):
        self._defaults[name] = default.clone()
        setattr(self, name, default.clone())

    def update(self, *args):
        self._computed = None
        self._update_count += 1
        self._update(*args)

    def _sync(self):
        names = list(self._defaults)
        flat = torch.stack([getattr(self, n).double() for n in names])
        dist.all_reduce(flat)
        return dict(zip(names, flat))

    def compute(self):
        if self._update_count == 0:
            warnings.warn(f"{type(self).__name__}.compute() called before update()", UserWarning, stacklevel=2)
        if self._computed is not None:  # return cached value
            return self._computed
        states = self._sync()
        self._computed = self._compute(states)
        return self._computed

    def reset(self):
        for name, default in self._defaults.items():
            setattr(self, name, default.clone())
        self._computed = None
        self._update_count = 0


class MeanAbsoluteError(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("sum_abs", torch.tensor(0.0))
        self.add_state("total", torch.tensor(0.0))

    def _update(self, preds, target):
        self.sum_abs += (preds - target).abs().sum()
        self.total += target.numel()

    def _compute(self, states):
        return (states["sum_abs"] / states["total"]).item()
