"""TORCH_DISTRIBUTED_DEBUG set inside a running rank: only groups created afterwards are checked."""

import os

import torch
import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def scenario():
    levels = [str(dist.get_debug_level())]
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"  # too late: torch read it at import
    levels.append(str(dist.get_debug_level()))
    dist.set_debug_level_from_env()  # re-read it now
    levels.append(str(dist.get_debug_level()))
    outcome = {"levels": levels}
    for name, group in (("new group", dist.new_group()), ("default group", None)):
        try:  # the same mismatch on each group: barrier on rank 0, all_reduce elsewhere
            if dist.get_rank() == 0:
                dist.barrier(group=group)
            else:
                dist.all_reduce(torch.ones(1), group=group)
            outcome[name] = "no error"
        except RuntimeError as error:
            from barrierlab.diagnose import explain_error

            kind = (explain_error(str(error)) or ("other error",))[0]
            checked = {"debug mismatch": "mismatch reported by the check",
                       "gloo timeout": "not checked: ended by the timeout",
                       "peer gone": "not checked: ended by the timeout"}  # the peer that timed out first
            outcome[name] = checked.get(kind, kind)
    return outcome


if __name__ == "__main__":
    torchrun_main(scenario)
