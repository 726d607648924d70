"""A directory every rank of one job agrees on without a collective: named after the job's store port."""

import os
import tempfile


def job_dir(tag: str) -> str:
    path = os.path.join(tempfile.gettempdir(), f"r3-{tag}-{os.environ.get('MASTER_PORT', 'local')}")
    os.makedirs(path, exist_ok=True)
    return path
