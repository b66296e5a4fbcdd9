"""The bound on wrong tokens (:mod:`noon.web.guesses`) as properties: whatever the sources and
the timing, no window holds more checked failures than the bounds, a refusal's wait is exactly
when the next token is checked, and memory holds no more than the window's failures."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from noon.web.guesses import Guesses

SOURCES = st.sampled_from(["127.0.0.1", "127.0.0.2", "127.0.0.3", "::1", "10.0.0.7"])
EVENTS = st.lists(st.tuples(SOURCES, st.floats(min_value=0, max_value=20)), max_size=300)


@given(events=EVENTS, per_client=st.integers(1, 12), total=st.integers(1, 40))
@example(events=[("127.0.0.1", 5.18), ("127.0.0.1", 0.0)], per_client=1, total=2)  # 61 s said
def test_no_window_holds_more_checked_failures_than_the_bounds(
    events: list[tuple[str, float]], per_client: int, total: int
) -> None:
    now = [0.0]
    g = Guesses(per_client=per_client, total=total, window=60.0, clock=lambda: now[0])
    checked: list[tuple[float, str]] = []
    for source, pause in events:
        now[0] += pause
        refused = g.refusal(source)
        if refused is None:
            g.failed(source)  # every guess is wrong
            checked.append((now[0], source))
        else:
            message, wait = refused
            assert 1 <= wait <= 60 and f"{wait} s more" in message
            assert "Too many wrong tokens" in message
        assert len(g._by_source) <= total and len(g._all) <= total
    for start, _ in checked:
        inside = [s for t, s in checked if start <= t < start + 60.0]
        assert len(inside) <= total
        for source in set(inside):
            assert inside.count(source) <= per_client


@given(spread=st.floats(min_value=0, max_value=59))
def test_a_refusal_lasts_exactly_as_long_as_it_says(spread: float) -> None:
    now = [100.0]
    g = Guesses(per_client=10, total=30, window=60.0, clock=lambda: now[0])
    for i in range(10):
        now[0] = 100.0 + spread * i / 9
        g.failed("127.0.0.2")
    refused = g.refusal("127.0.0.2")
    assert refused is not None and "from 127.0.0.2 (10 in the last 60 s)" in refused[0]
    assert g.refusal("127.0.0.3") is None  # another address is still checked
    now[0] += refused[1] - 1.0
    assert g.refusal("127.0.0.2") is not None
    now[0] += 1.0
    assert g.refusal("127.0.0.2") is None
