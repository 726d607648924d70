"""Promise 2: a rank's hostile exception object must not cost the rank its report: barrierlab reports a raised
exception whose __str__ fails ("its message could not be shown"), and Python itself prints a traceback for an
exception class whose __module__ is not a str ("<unknown>"). Here rank 1 raises such an exception: barrierlab reports
rank 1 as "exited with code 70 before returning from the function", with no exception type, message, traceback or
stderr, and the diagnosis says to read a traceback that is not there. Exit 0 if rank 1 is reported as having raised
(with its message), 1 if not."""

import subprocess
import sys

import barrierlab as bl


def raise_odd_exception():
    import torch.distributed as dist

    class Unprintable:
        def __format__(self, spec):
            raise RuntimeError("no format")

        def __str__(self):
            raise RuntimeError("no str")

    class DataError(Exception):
        pass

    DataError.__module__ = Unprintable()  # a class attribute like any other
    dist.barrier()
    if dist.get_rank() == 1:
        raise DataError("shard 7 is empty")
    return "fine"


PLAIN = """
class Unprintable:
    def __format__(self, spec): raise RuntimeError("no format")
    def __str__(self): raise RuntimeError("no str")
class DataError(Exception): pass
DataError.__module__ = Unprintable()
raise DataError("shard 7 is empty")
"""


def main() -> int:
    plain = subprocess.run([sys.executable, "-c", PLAIN], capture_output=True, text=True, timeout=60)
    print("plain python prints:", plain.stderr.strip().splitlines()[-1])
    run = bl.run(raise_odd_exception, 2, live=False, timeout=5)
    print(repr(run))
    print("rank 1 traceback:", repr(run[1].traceback[-200:]), "stderr:", repr(run[1].stderr[-200:]))
    print("diagnosis:", str(run.diagnosis).replace("\n", " | ")[:400])
    if run[1].status != "raised" or "shard 7 is empty" not in (run[1].error_message or ""):
        print(
            "BROKEN: rank 1 raised DataError('shard 7 is empty'); barrierlab reports it as "
            f"{run[1].status!s} (code {run[1].exit_code}) with no message or traceback"
        )
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
