"""attack22 a04: "first rank wins" with open(path, "x").

Promise (docs/reference.md, "File races"): the model reports accesses that change a file. open(path, "x")
(O_CREAT|O_EXCL) is atomic: exactly one rank creates the file, the others get FileExistsError and touch nothing
(the idiom behind many lock and "claim this shard" files). Both ranks try; the model reports the loser's failed
open as "opened `claim` for writing" racing the winner's. For os.mkdir of an existing folder the recorder knows
the call changed nothing ("ensure"); for open "x" it does not. Exit 0 if no race is reported.
"""

import os

import torch.distributed as dist
from _h import races_of, verdict


def claim(d):
    dist.barrier()  # both ranks try at about the same time
    try:
        with open(os.path.join(d, "claim"), "x") as f:
            f.write(str(dist.get_rank()))
        won = True
    except FileExistsError:
        won = False
    dist.barrier()
    return won


def main():
    run, races = races_of(claim)
    assert run.ok, run
    print("won:", run.values)
    for r in races:
        print("   ", r)
    assert sorted(run.values) == [False, True], run.values
    verdict(bool(races), f"{len(races)} race(s) reported for one exclusive create and one failed one")


if __name__ == "__main__":
    main()
