"""attack22 a10: `barrierlab run script.py` against how the same program ends under torchrun.

Promise (docs/reference.md, "Your training script"): a script passes under barrierlab run exactly when it passes
under torchrun (every worker exits 0), with its own init_process_group/destroy_process_group; sys.exit(code)
counts by the status Python would exit with. Scripts as people write them: sys.exit with odd codes (256, -256,
2**31 exit 0 in Python; 2**63, 0.0, [] exit non-zero), an atexit handler that calls sys.exit(3) (Python ignores
it: exit 0) or os._exit(3) (exit 3), destroy_process_group twice (torch raises) or never, init_method tcp:// and
file://, a DataLoader with forked and with spawned workers, a subprocess of
sys.executable, torchelastic's @record around a raise, a SIGTERM handler calling sys.exit(0), argparse with a
missing required argument, KeyboardInterrupt, a SIGALRM timeout handler, __main__'s
__file__/__spec__/pickling, sys.exit in a thread, a forked child's sys.exit, argv with "--" and "-n" passed through. Runs through
barrierlab.script.run_script (what the command runs; the command exits 0 iff run.ok), plus one run of the command
itself. Exit 0 if every script passes/fails as under torchrun.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

from _h import verdict

from barrierlab.script import run_script

PY = sys.executable
HEAD = "import os, sys, atexit, signal\nimport torch, torch.distributed as dist\n"
SCRIPTS = {
    # name: (body, expected ok under torchrun)
    "atexit_sys_exit": (
        "atexit.register(lambda: sys.exit(3))\ndist.init_process_group('gloo'); dist.barrier()\n",
        True,
    ),
    "atexit_os_exit": (
        "atexit.register(lambda: os._exit(3))\ndist.init_process_group('gloo'); dist.barrier()\n",
        False,
    ),
    "destroy_twice": (
        "dist.init_process_group('gloo'); dist.barrier(); dist.destroy_process_group(); dist.destroy_process_group()\n",
        False,
    ),
    "never_destroy": ("dist.init_process_group('gloo'); dist.barrier()\n", True),
    "tcp_init": (
        "dist.init_process_group('gloo', init_method='tcp://127.0.0.1:29517', rank=int(os.environ['RANK']),"
        " world_size=int(os.environ['WORLD_SIZE']))\ndist.barrier(); dist.destroy_process_group()\n",
        True,
    ),
    "file_init": (
        "dist.init_process_group('gloo', init_method='file://' + sys.argv[1], rank=int(os.environ['RANK']),"
        " world_size=int(os.environ['WORLD_SIZE']))\ndist.barrier(); dist.destroy_process_group()\n",
        True,
    ),
    "loader_fork": (
        textwrap.dedent("""
        from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
        def main():
            dist.init_process_group('gloo')
            ds = TensorDataset(torch.arange(64.0))
            t = torch.zeros(1)
            for (x,) in DataLoader(ds, batch_size=8, num_workers=2, sampler=DistributedSampler(ds)):
                t += x.sum()
            dist.all_reduce(t)
            assert t.item() == sum(range(64)), t
        if __name__ == '__main__':
            main()
        """),
        True,
    ),
    "loader_spawn": (
        textwrap.dedent("""
        from torch.utils.data import DataLoader, TensorDataset
        def main():
            dist.init_process_group('gloo')
            dl = DataLoader(TensorDataset(torch.arange(16.0)), batch_size=4, num_workers=1,
                            multiprocessing_context='spawn')
            assert sum(x.sum() for (x,) in dl).item() == 120.0
            dist.barrier()
        if __name__ == '__main__':
            main()
        """),
        True,
    ),
    "subprocess": (
        "dist.init_process_group('gloo')\nimport subprocess\n"
        "out = subprocess.run([sys.executable, '-c', 'print(6*7)'], capture_output=True, text=True, check=True)\n"
        "assert out.stdout.strip() == '42'\ndist.barrier()\n",
        True,
    ),
    "record_raise": (
        textwrap.dedent("""
        from torch.distributed.elastic.multiprocessing.errors import record
        @record
        def main():
            dist.init_process_group('gloo'); dist.barrier()
            if dist.get_rank() == 1:
                raise ValueError('boom')
        if __name__ == '__main__':
            main()
        """),
        False,
    ),
    "sigterm_handler": (
        "signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))\ndist.init_process_group('gloo'); dist.barrier()\n"
        "os.kill(os.getpid(), signal.SIGTERM) if dist.get_rank() == 1 else None\n",
        True,
    ),
    "argparse_missing": (
        "import argparse\np = argparse.ArgumentParser(); p.add_argument('--data', required=True); p.parse_args()\n",
        False,
    ),
    "keyboard_interrupt": ("dist.init_process_group('gloo'); dist.barrier()\nraise KeyboardInterrupt\n", False),
    "argv": (
        "assert sys.argv[1:] == ['--foo', '--', 'bar', '-n', '5'], sys.argv\n"
        "assert isinstance(os.environ['LOCAL_RANK'], str) and int(os.environ['WORLD_SIZE']) == 2\n",
        True,
    ),
    "sigalrm_timeout": (
        "class TO(Exception): pass\ndef h(s, f): raise TO()\nsignal.signal(signal.SIGALRM, h)\n"
        "dist.init_process_group('gloo'); signal.alarm(1)\nimport time\n"
        "try:\n    time.sleep(5); sys.exit(5)\nexcept TO:\n    pass\ndist.barrier()\n",
        True,
    ),
    "main_module": (
        "m = sys.modules['__main__']\nassert os.path.samefile(m.__file__, __file__) and __spec__ is None\n"
        "import pickle, inspect\nclass C: pass\nassert pickle.loads(pickle.dumps(C())).__class__.__module__ == '__main__'\n"
        "assert os.path.samefile(inspect.getsourcefile(C), __file__)\n",
        True,
    ),
    "thread_sys_exit": (
        "import threading\nt = threading.Thread(target=lambda: sys.exit(4)); t.start(); t.join()\n",
        True,
    ),
    "fork_child_sys_exit": (
        "dist.init_process_group('gloo')\npid = os.fork()\nif pid == 0:\n    sys.exit(7)\n"
        "_, st = os.waitpid(pid, 0)\nassert os.waitstatus_to_exitcode(st) == 7, st\ndist.barrier()\n",
        True,
    ),
}
CODES = ["256", "-256", "2**31", "2**63", "0.0", "[]", "3", "True", "None"]


def main():
    d = tempfile.mkdtemp(prefix="a22-a10-")
    wrong = []
    try:
        for code in CODES:
            ref = subprocess.run([PY, "-c", f"import sys; sys.exit({code})"], capture_output=True).returncode
            SCRIPTS[f"sys.exit({code})"] = (
                f"dist.init_process_group('gloo'); dist.barrier(); dist.destroy_process_group()\nsys.exit({code})\n",
                ref == 0,
            )
        for name, (body, expected) in SCRIPTS.items():
            path = os.path.join(d, "s.py")
            with open(path, "w") as f:
                f.write(HEAD + body)
            argv = [os.path.join(d, "fstore")] if name == "file_init" else []
            if name == "argv":
                argv = ["--foo", "--", "bar", "-n", "5"]
            run = run_script(path, 2, argv, timeout=5, deadline=40)
            got = bool(run.ok)
            mark = "ok " if got == expected else "BAD"
            print(f"{mark} {name}: torchrun {'passes' if expected else 'fails'}, barrierlab {run.statuses}")
            if got != expected:
                wrong.append(name)
            if os.path.exists(os.path.join(d, "fstore")):
                os.remove(os.path.join(d, "fstore"))
        # the command itself, once: exit code of `barrierlab run`
        with open(os.path.join(d, "s.py"), "w") as f:
            f.write(HEAD + "dist.init_process_group('gloo'); dist.barrier()\nsys.exit(256)\n")
        env = dict(
            os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
        )
        rc = subprocess.run(
            [PY, "-m", "barrierlab", "run", os.path.join(d, "s.py"), "-n", "2"],
            env=env,
            capture_output=True,
            timeout=100,
        ).returncode
        print(f"{'ok ' if rc == 0 else 'BAD'} command: barrierlab run of sys.exit(256) exits {rc} (python: 0)")
        if rc != 0:
            wrong.append("command sys.exit(256)")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    verdict(bool(wrong), f"{len(wrong)} script(s) judged unlike torchrun: {wrong}")


if __name__ == "__main__":
    main()
