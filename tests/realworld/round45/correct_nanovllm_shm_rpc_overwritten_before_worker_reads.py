"""nano-vllm (fixed): rank 0 reuses the shared-memory RPC buffer only after every worker has acknowledged reading it.

Source: GeeeekExplorer/nano-vllm issue #246 ("Tensor parallel shared-memory RPC lacks worker acknowledgement and can
corrupt commands") and PR #248, `nanovllm/engine/model_runner.py` (`ModelRunner.write_shm`, `read_shm`, `loop`,
`call`). With `tensor_parallel_size > 1` rank 0 pickles each method call into a shared-memory buffer and sets the
workers' events; a worker waits on its event, unpickles the buffer and runs the same method. "There is no
worker-to-rank0 acknowledgement that the previous command has been fully read", so rank 0 "may overwrite the
shared-memory buffer with the next RPC while one or more worker ranks are still reading" -- `_pickle.UnpicklingError`
on the worker, which exits, and the remaining ranks wait in their next collective.

Here (gloo, CPU, 2 ranks) the buffer is a `SharedMemory` segment whose header holds the command's sequence number
(the event) and length; reading a large command (a batch's sequences) takes the worker ~0.3 s, while rank 0's own
`cleanup_seq_states` is local (0.1 s, no collective), so rank 0 writes the next command (`run`, whose forward
all-reduces) into the buffer the worker is still copying. This is the fix PR #248 gives: each worker acknowledges a
command once it has read it (`ack_event`), and `write_shm` waits for every worker's acknowledgement before reusing
the buffer.
"""

import datetime
import pickle
import struct
import time
import uuid
from multiprocessing import resource_tracker
from multiprocessing.shared_memory import SharedMemory

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

HEADER = 32  # seq (q) | ack (q) | length (q)
SIZE = 1 << 16
READ_CHUNKS = 16
POLL = 0.005


class ModelRunner:
    def __init__(self, rank: int, shm: SharedMemory):
        self.rank = rank
        self.shm = shm
        self.seq = 0
        self.done = 0.0

    # ---- shared-memory RPC
    def _header(self):
        return struct.unpack_from("qqq", self.shm.buf, 0)

    def write_shm(self, method_name, *args):
        data = pickle.dumps([method_name, *args])
        deadline = time.monotonic() + TIMEOUT
        while self._header()[1] != self.seq:  # wait for the workers' acknowledgement of the previous command
            if time.monotonic() > deadline:
                raise TimeoutError("a worker did not acknowledge the previous command")
            time.sleep(POLL)
        self.seq += 1
        self.shm.buf[HEADER:HEADER + len(data)] = data
        struct.pack_into("qqq", self.shm.buf, 0, self.seq, self._header()[1], len(data))

    def read_shm(self):
        deadline = time.monotonic() + TIMEOUT
        while self._header()[0] == self.seq:  # the worker's event.wait()
            if time.monotonic() > deadline:
                raise TimeoutError("no command from rank 0")
            time.sleep(POLL)
        seq, ack, n = self._header()
        chunk = -(-n // READ_CHUNKS)
        payload = bytearray()
        for start in range(0, n, chunk):  # a large batch takes a while to copy and unpickle
            payload += self.shm.buf[HEADER + start:HEADER + min(n, start + chunk)]
            time.sleep(0.02)
        method_name, *args = pickle.loads(bytes(payload))
        self.seq = seq
        struct.pack_into("q", self.shm.buf, 8, seq)  # acknowledged
        return method_name, args

    def call(self, method_name, *args):
        if self.rank == 0:
            self.write_shm(method_name, *args)
        return getattr(self, method_name)(*args)

    def loop(self):
        while True:
            method_name, args = self.read_shm()
            self.call(method_name, *args)
            if method_name == "exit":
                break

    # ---- the methods rank 0 dispatches
    def cleanup_seq_states(self, finished):
        time.sleep(0.1)  # free the finished sequences' KV blocks: local, no collective
        return len(finished)

    def run(self, seqs):
        hidden = torch.tensor([float(sum(s)) for s in seqs])
        dist.all_reduce(hidden)
        return hidden.tolist()

    def exit(self):
        done = torch.ones(1)
        dist.all_reduce(done)
        self.done = float(done.item())


def worker():
    rank = dist.get_rank()
    name = [f"c45nanovllm_{uuid.uuid4().hex[:12]}" if rank == 0 else None]
    if rank == 0:
        shm = SharedMemory(name=name[0], create=True, size=SIZE)
        shm.buf[:HEADER] = bytes(HEADER)
    dist.broadcast_object_list(name, src=0)
    if rank != 0:
        shm = SharedMemory(name=name[0])
        resource_tracker.unregister(shm._name, "shared_memory")  # rank 0 owns the segment
    runner = ModelRunner(rank, shm)
    try:
        if rank == 0:
            finished = [list(range(100000 + 7 * i, 100200 + 7 * i)) for i in range(40)]  # large commands
            running = [list(range(5000 + 3 * i, 5200 + 3 * i)) for i in range(40)]
            runner.call("cleanup_seq_states", finished)
            out = runner.call("run", running)
            runner.call("exit")
            print(f"[rank {rank}] run -> {len(out)} sequences, first {out[0]:.0f}; exit with {runner.done:.0f} ranks")
        else:
            runner.loop()
            print(f"[rank {rank}] worker loop exited with {runner.done:.0f} ranks")
    finally:
        shm.close()
        if rank == 0:
            shm.unlink()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
