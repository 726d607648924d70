"""Rank 0 downloads inside main_process_first(): the others wait, and learn at once if the download fails."""

import os

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main
from barrierlab.scenarios.rank0_prepares_data import download, read_rows
from barrierlab.sync import main_process_first


def scenario(folder=None, fail_after=None):
    folder = shared_folder(folder)
    path = os.path.join(folder, "train.csv")
    with main_process_first() as is_main:  # the others wait here; rank 0 runs the body first
        if is_main:
            with span("download", kind="io"):
                download(path, fail_after=fail_after)
        with span("read", kind="io"):
            rows = read_rows(path)
    return len(rows)


if __name__ == "__main__":
    torchrun_main(scenario)
