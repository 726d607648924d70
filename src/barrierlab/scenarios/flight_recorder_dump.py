"""Read torch's flight recorder (a private API) after the extra-barrier bug: one rank has one more entry."""

import json

import torch

from barrierlab.scenarios import extra_barrier, torchrun_main


def scenario(steps=2):
    try:
        extra_barrier.scenario(steps=steps)
    except RuntimeError:
        pass  # rank 0 fails at its last barrier; we want the record, not the error
    try:
        trace = json.loads(torch._C._distributed_c10d._dump_fr_trace_json())  # private: guard it
    except (AttributeError, RuntimeError, ValueError) as error:
        return f"flight recorder unavailable: {type(error).__name__}"
    return [f"{e['profiling_name']}#{e['collective_seq_id']}" for e in trace["entries"]]


if __name__ == "__main__":
    torchrun_main(scenario)
