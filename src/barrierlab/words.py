"""Small wording helpers every text of a run uses (diagnosis, ledger, summaries), so ranks are listed alike."""

from __future__ import annotations


def rank_list(ranks: list[int]) -> str:
    """'rank 2', 'ranks 1 and 3', 'ranks 1–15', 'ranks 0, 2 and 5'."""
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"ranks {ranks[0]}–{ranks[-1]}"
    return "ranks " + ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"
