"""A tqdm bar's identity is its description with the numbers masked (hanglens/analysis/progress.py
`bar_name`): a loop that shows its running loss in the description (`set_description`) draws one bar."""

from __future__ import annotations

from itertools import count

from hanglens.analysis.progress import bar_name, progress_rows
from hanglens.model import Event, SourceRef

_line = count(1)


def bar(rank: int, n: int, total: int, label: str | None) -> Event:
    return Event(kind="progress", ref=SourceRef("console.log", next(_line)), text=f"{label}: {n}/{total}",
                 parser="progress", rank=rank, time=None,
                 fields={"step": n, "total": total, "epoch": None, "pattern": "tqdm", "label": label})


def test_numbers_in_a_description_are_masked() -> None:
    assert bar_name("Loss: 29.983957290649414") == bar_name("Loss: 0.5") == "Loss: #"
    assert bar_name("epoch 3 loss 1e-05") == "epoch # loss #"
    assert bar_name("Loss: nan") == "Loss: #"
    assert bar_name("Rebuilding token cache") == "Rebuilding token cache"
    assert bar_name("infinite") == "infinite"
    assert bar_name(None) is None


def test_ranks_drawing_one_bar_with_their_own_loss_are_compared() -> None:
    # every rank draws its training bar with its own loss in the description; rank 2 stopped behind
    events = []
    for r in range(3):
        for n in range(1, (3 if r == 2 else 6)):
            events.append(bar(r, n, 10, f"loss {1.0 / (n + r):.4f}"))
    rows = {row["rank"]: row for row in progress_rows(events, {})}
    assert sorted(rows) == [0, 1, 2]
    assert rows[2]["position"] == "behind" and rows[0]["position"] == "same"
