"""Rank functions that flood what a rank leaves behind, for tests that time the collection after a deadline.

Ranks import this module fresh from its file, inside their deadline: it imports nothing heavy (a test module
importing pytest and psutil took a loaded machine's ranks past a 1.5 s deadline before their first span)."""

import barrierlab as bl


def span_flood():
    """Record spans until the deadline stops the rank."""
    while True:
        with bl.span("x"):
            pass
