"""Explanation templates: the rule filters, the sandbox, and errors that become messages."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from hanglens.engine.template import find_variables, rank_list, render


@pytest.mark.parametrize(("values", "text"), [
    ([], ""),
    ([3], "3"),
    ([3, 0, 1, 2, 2, 5, 9, 7, 8], "0-3, 5, 7-9"),
    ([1.0, None, float("nan"), "x", 4], "1, 4"),
    ([[15, 8], [8, 15], None], "8, 15"),
])
def test_rank_list(values: list[Any], text: str) -> None:
    assert rank_list(values) == text


FRAME = pd.DataFrame({"rank": [2, 0, 1, None], "pg": ["0", "0", "1", None], "seq": [5, 7, 6, None],
                      "host": ["b", "a", "a", None]}, dtype=object)


@pytest.mark.parametrize(("source", "text"), [
    ("{{ b.rank | rank_list }}", "0-2"),
    ("{{ b.rank | ranks_phrase | capitalize }} waited; so did {{ [4] | ranks_phrase }}.",
     "Ranks 0-2 waited; so did rank 4."),
    ("{{ [2] | ranks_phrase }} {{ [2] | agree('was', 'were') }} late, {{ b.rank | ranks_phrase }} "
     "{{ b.rank | agree('was', 'were') }} not, "
     "{{ [] | ranks_phrase }} {{ [] | agree('was', 'were') }} unknown.",
     "rank 2 was late, ranks 0-2 were not, ranks not named in the logs were unknown."),
    ("{{ [] | ranks_phrase | capitalize }} report; so do {{ [None] | ranks_phrase }}.",
     "Ranks not named in the logs report; so do ranks not named in the logs."),
    ("{{ b.pg | first }}", "0"),
    ("{{ b.seq | min }}-{{ b.seq | max }}", "5-7"),
    ("{{ b.rank | count }} of {{ b | count }}", "3 of 4"),
    ("{{ b.pg | unique | join('+') }}", "0+1"),
    ("{{ b.rank | hosts | join }}", "node-a, node-c"),
    ("{{ b['seq'] | max }} {{ world_size }}", "7 8"),
    ("{% for row in b %}{{ row.rank }};{% endfor %}", "2;0;1;None;"),
    ("  padded  \n", "padded"),
    ("{{ 352321536 | size }} {{ 4670874419 | size }} {{ 140737488355328 | size }} {{ 512 | size }}",
     "336.00 MiB 4.35 GiB 128.00 TiB 512 bytes"),
    ("{{ 14400000000 | tally }}/{{ 20000000000 | tally }} {{ 1830000 | tally }} {{ 999999 | tally }}",
     "14.4G/20.0G 1.83M 999999"),
])
def test_filters(source: str, text: str) -> None:
    out, error = render(source, {"b": FRAME}, {"world_size": 8, "hosts_by_rank": {0: "node-a", 2: "node-c"}})
    assert (out, error) == (text, None)


@pytest.mark.parametrize("source", [
    "{{ missing }}",
    "{{ b.nocolumn | first }}",
    "{{ b.__class__.__mro__ }}",
    "{{ b | min }}",
    "{{ b.rank | first + 'x' }}",
])
def test_errors_become_messages(source: str) -> None:
    out, error = render(source, {"b": FRAME}, {})
    assert error is not None
    assert out.startswith("(explanation could not be rendered: ")


def test_find_variables() -> None:
    source = "{{ a.rank | rank_list }} {{ world_size }} {% for r in c %}{{ r.x }}{% endfor %}"
    names, attrs = find_variables(source)
    assert names == {"a", "world_size", "c"}
    assert ("a", "rank") in attrs


def test_unknown_filter_is_a_load_error() -> None:
    with pytest.raises(Exception, match="nosuchfilter"):
        find_variables("{{ a | nosuchfilter }}")
