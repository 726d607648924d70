"""Stand-in for Hugging Face Accelerate's ``Accelerator`` (multi-process CPU, i.e. DDP over gloo).

Mirrors huggingface/accelerate ``src/accelerate/accelerator.py`` (``Accelerator.prepare``, ``backward``,
``wait_for_everyone``, ``save_state``, ``gather_for_metrics``, ``set_trigger``/``check_trigger`` (added in
PR #1940), ``main_process_first``) and ``src/accelerate/state.py`` (``PartialState.wait_for_everyone`` is a
``torch.distributed.barrier()``; ``PartialState._goes_first`` waits *without* try/finally, so an exception
on the main process inside ``main_process_first`` leaves the other processes waiting).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


@dataclass
class ProjectConfiguration:
    project_dir: str = "."
    automatic_checkpoint_naming: bool = False
    total_limit: int | None = None
    iteration: int = 0


class Accelerator:
    def __init__(self, project_config: ProjectConfiguration | None = None) -> None:
        self.project_configuration = project_config or ProjectConfiguration()
        self.process_index = dist.get_rank()
        self.num_processes = dist.get_world_size()
        self.local_process_index = int(os.environ.get("LOCAL_RANK", self.process_index))
        self._models: list[torch.nn.Module] = []
        self.flag_tensor = None

    @property
    def is_main_process(self) -> bool:
        return self.process_index == 0

    @property
    def is_local_main_process(self) -> bool:
        return self.local_process_index == 0

    def prepare(self, *objects):
        prepared = []
        for obj in objects:
            if isinstance(obj, torch.nn.Module):
                obj = DistributedDataParallel(obj)  # accelerate wraps models in DDP for MULTI_CPU / MULTI_GPU
                self._models.append(obj)
            prepared.append(obj)
        return prepared[0] if len(prepared) == 1 else tuple(prepared)

    def unwrap_model(self, model):
        return model.module if isinstance(model, DistributedDataParallel) else model

    def backward(self, loss) -> None:
        loss.backward()

    def wait_for_everyone(self) -> None:
        if self.num_processes > 1:
            dist.barrier()

    def print(self, *args, **kwargs) -> None:
        if self.is_local_main_process:
            print(*args, **kwargs)

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.num_processes == 1:
            return tensor
        out = torch.empty((self.num_processes * tensor.shape[0], *tensor.shape[1:]), dtype=tensor.dtype)
        dist.all_gather_into_tensor(out, tensor.contiguous())
        return out

    def gather_for_metrics(self, tensor: torch.Tensor) -> torch.Tensor:
        return self.gather(tensor)

    def save_state(self, output_dir: str | None = None) -> str:
        config = self.project_configuration
        if config.automatic_checkpoint_naming:
            output_dir = os.path.join(config.project_dir, "checkpoints")
        os.makedirs(output_dir, exist_ok=True)
        if config.automatic_checkpoint_naming:
            output_dir = os.path.join(output_dir, f"checkpoint_{config.iteration}")
            self.wait_for_everyone()
        os.makedirs(output_dir, exist_ok=True)
        for i, model in enumerate(self._models):
            if self.is_main_process:  # save_accelerator_state writes weights on the main process only
                torch.save(self.unwrap_model(model).state_dict(), os.path.join(output_dir, f"model_{i}.bin"))
        torch.save(torch.get_rng_state(), os.path.join(output_dir, f"random_states_{self.process_index}.pkl"))
        config.iteration += 1
        return output_dir

    def set_trigger(self) -> None:
        self.flag_tensor = torch.tensor(1)

    def check_trigger(self) -> bool:
        if self.flag_tensor is None:
            self.flag_tensor = torch.tensor(0)
        flag = self.flag_tensor.clone()
        dist.all_reduce(flag)  # Accelerator.reduce(..., "sum")
        if flag.item() >= 1:
            self.flag_tensor = torch.tensor(0)
            return True
        return False

    @contextmanager
    def main_process_first(self):
        if not self.is_main_process:
            self.wait_for_everyone()
        yield
        if self.is_main_process:
            self.wait_for_everyone()
