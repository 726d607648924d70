"""Promise 3: a program that passes under torchrun (plain Python) passes under bl.run / barrierlab run.

A class keeps builtins as class attributes (`_open = open`, `_stat = os.stat`) and calls them as
`self._open(path, "w")`: builtins do not bind as methods, so this works in any plain Python process. Inside a
rank the recorder has replaced `open` and `os.stat` with Python wrapper functions, which DO bind: `self` is
passed as the file name and the call fails with TypeError.
Exits 0 when the rank gets the same result as this process, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile

import barrierlab as bl

MODULE = """
import os

class Store:
    _open = open
    _stat = os.stat

    def __init__(self, folder):
        self.folder = folder

    def write(self, name, text):
        path = os.path.join(self.folder, name)
        with self._open(path, "w") as f:
            f.write(text)
        return self._stat(path).st_size
"""


def use_store(folder):
    sys.path.insert(0, folder)
    import openers_a18

    try:
        return openers_a18.Store(folder).write("x.txt", "hello")
    except Exception as error:  # noqa: BLE001
        return f"{type(error).__name__}: {error}"


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a18_a18_")
    try:
        with open(os.path.join(folder, "openers_a18.py"), "w") as f:
            f.write(MODULE)
        here = use_store(folder)
        sys.modules.pop("openers_a18", None)
        run = bl.run(use_store, world_size=1, args=(folder,))
        print("plain process:", here)
        print("bl.run rank:  ", run.values[0])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if run.values[0] != here:
        print("BROKEN: `open`/`os.stat` kept as class attributes bind as methods inside a rank")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
