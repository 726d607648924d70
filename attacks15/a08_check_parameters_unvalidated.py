"""a08: the exercise checks do not validate their own parameters. nb07.check_results(fn, seeds=[]) returns
✓ "0 of 0 runs complete" for a function that does nothing; seeds="ab" runs "seed a"; nb03.check(train,
save_every=0) and nb08.check(solution, epochs=0) run the learner's code and blame it; nb02.check_save_atomically(None)
says rank 0 "was not killed" instead of naming the parameter.
Promise 5: every parameter validated first, with a message naming it (and promise 4: no ✓ for a wrong answer).
Exits 0 if the promise holds, 1 if it breaks."""

import os
import sys

from barrierlab.exercises import nb02, nb03, nb07, nb08

SOLUTION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "notebooks", "capstone", "solution.py")


def does_nothing(workdir, seed=0):
    return None


def train_does_nothing(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    return None


CASES = [
    ("nb07.check_results(does_nothing, seeds=[])", lambda: nb07.check_results(does_nothing, seeds=[]), "seeds"),
    ("nb07.check_results(does_nothing, seeds='ab')", lambda: nb07.check_results(does_nothing, seeds="ab"), "seeds"),
    ("nb03.check(train, save_every=0)", lambda: nb03.check(train_does_nothing, save_every=0), "save_every"),
    ("nb03.check(train, steps=-2)", lambda: nb03.check(train_does_nothing, steps=-2), "steps"),
    ("nb08.check(solution.py, epochs=0)", lambda: nb08.check(SOLUTION, epochs=0), "epochs"),
    ("nb02.check_save_atomically(None)", lambda: nb02.check_save_atomically(None, quiet=True), "save"),
]


def main() -> int:
    broken = []
    for text, call, parameter in CASES:
        try:
            verdict = call()
        except (TypeError, ValueError) as error:
            print(f"{text}: {type(error).__name__}: {error}")
            if parameter not in str(error):
                broken.append(f"{text}: the error does not name {parameter}")
            continue
        print(f"{text}: returned {str(verdict)[:200]!r}")
        broken.append(f"{text}: not refused as a bad {parameter}; returned {'✓' if verdict else '✗'}")
    for b in broken:
        print("BROKEN:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
