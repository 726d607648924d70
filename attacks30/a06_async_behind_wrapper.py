"""Promise (docs/reference.md): "Generator and async def functions are refused with a hint"; launch._check_function:
"functools.partial of one is unwrapped by inspect itself".
Attack: async def / generator functions behind the wrappers Python itself makes and marks with __wrapped__
(functools.lru_cache, a functools.wraps decorator), and staticmethod(). Each is an async def (or generator)
function whose body never runs in the ranks. Refused before anything starts, or run?"""

from _h import run_driver, verdict

DRIVER = r"""
import functools, barrierlab as bl

async def train():
    return 1

def gen():
    yield 1

def logged(f):
    @functools.wraps(f)
    def wrapper(*a, **k):
        return f(*a, **k)
    return wrapper

cases = {
    "functools.lru_cache(async def)": functools.lru_cache(train),
    "functools.wraps decorator on async def": logged(train),
    "staticmethod(async def)": staticmethod(train),
    "functools.wraps decorator on a generator function": logged(gen),
    "functools.partial(async def) (control: documented as refused)": functools.partial(train),
}
for name, fn in cases.items():
    try:
        run = bl.run(fn, 2, timeout=2, deadline=4)
        print(f"RAN: {name}: {' | '.join(repr(run).splitlines()[:2])[:260]}")
    except TypeError as e:
        print(f"REFUSED: {name}: {str(e)[:120]}")
"""

r = run_driver(DRIVER, timeout=120)
r.show()
ran = [l for l in r.out.splitlines() if l.startswith("RAN:")]
assert r.rc == 0, "driver failed"
verdict(bool(ran), f"{len(ran)} of 5 wrapped async/generator functions were run, not refused")
