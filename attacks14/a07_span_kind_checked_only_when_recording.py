"""Promise 5 (every parameter validated first, the same way every time) and promise 3's spirit (recording does not
change whether a program passes): `barrierlab.span(name, kind=...)` refuses a kind other than compute/io/wait/other
with ValueError only while recording; with record=False (and outside a rank) the same call is accepted silently. A
span name whose str() raises makes the rank raise with record=True and pass with record=False.
Exit 0 if record=True and record=False end the same way for each call, 1 if not."""

import sys

import barrierlab as bl


def with_span(kind, bad_name):
    import torch.distributed as dist

    import barrierlab as bl

    class Name:
        def __str__(self):
            raise RuntimeError("this name has no text")

    with bl.span(Name() if bad_name else "load", kind=kind):
        dist.barrier()
    return "ok"


def main() -> int:
    broken = False
    for kind, bad_name in (("IO", False), (None, False), ("io", True)):
        outcomes = {}
        for record in (True, False):
            run = bl.run(with_span, 2, args=(kind, bad_name), record=record, live=False)
            outcomes[record] = (run.statuses, run[0].error_message.splitlines()[0] if run[0].error_message else "")
        print(f"kind={kind!r} bad_name={bad_name}: record=True -> {outcomes[True]}; record=False -> {outcomes[False]}")
        if outcomes[True][0] != outcomes[False][0]:
            broken = True
    if broken:
        print("BROKEN: the same rank code raises or passes depending on record=")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
