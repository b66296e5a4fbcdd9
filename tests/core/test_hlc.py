from hypothesis import given
from hypothesis import strategies as st

from noon.core import hlc
from noon.core.hlc import COUNTER_MAX, Clock, pack

walls = st.integers(min_value=0, max_value=2**47)


@given(st.lists(st.tuples(st.booleans(), walls, walls), max_size=200))
def test_ticks_strictly_increase_whatever_the_wall_clock_does(events):
    clock = Clock(max_skew_ms=60_000)
    seen = 0
    for is_observe, wall, remote_ms in events:
        if is_observe:
            clock.observe(pack(remote_ms, 7), wall)
            seen = max(seen, clock.last)
        else:
            stamp = clock.tick(wall)
            assert stamp > seen
            seen = stamp


@given(st.lists(st.tuples(st.integers(0, 2), st.booleans(), walls), min_size=1, max_size=200))
def test_a_node_written_by_several_processes_stamps_its_shard_strictly_rising(events):
    """Each process keeps its own clock and observes the shard's ops clamped to its wall clock
    (as a fold does), however far that wall clock stepped back; under the shard's lock it
    follows the shard's last stamp before it ticks. The shard's stamps rise strictly."""
    clocks = [Clock(max_skew_ms=60_000) for _ in range(3)]
    shard: list[int] = []
    for writer, folds_first, wall in events:
        clock = clocks[writer]
        if folds_first and shard:
            clock.observe(shard[-1], wall)
        if shard:
            clock.follow(shard[-1])
        stamp = clock.tick(wall)
        assert not shard or stamp > shard[-1]
        shard.append(stamp)


def test_following_an_own_stamp_far_ahead_is_not_clamped():
    clock = Clock(max_skew_ms=60_000)
    clock.follow(pack(10_000_000, 3))
    assert clock.clamped == 0
    assert clock.tick(1000) == pack(10_000_000, 4)


def test_wall_clock_stepping_back_keeps_physical_time_and_counts_up():
    clock = Clock()
    a = clock.tick(1000)
    b = clock.tick(999)
    assert hlc.physical(b) == 1000 and hlc.counter(b) == 1 and b > a


def test_counter_overflow_borrows_the_next_millisecond():
    clock = Clock(last=pack(5000, COUNTER_MAX))
    stamp = clock.tick(5000)
    assert hlc.physical(stamp) == 5001 and hlc.counter(stamp) == 0


def test_far_future_remote_stamp_is_clamped_and_counted():
    clock = Clock(max_skew_ms=60_000)
    assert clock.observe(pack(10_000_000, 0), 1000) is True
    assert clock.clamped == 1
    assert hlc.physical(clock.last) == 61_000
    assert hlc.physical(clock.tick(1000)) == 61_001


def test_remote_stamp_within_bound_is_adopted_without_clamp():
    clock = Clock(max_skew_ms=60_000)
    assert clock.observe(pack(30_000, 5), 1000) is False
    assert clock.tick(1000) == pack(30_000, 6)
    assert clock.clamped == 0


@given(walls, st.integers(0, COUNTER_MAX))
def test_pack_round_trips(ms, c):
    s = pack(ms, c)
    assert hlc.physical(s) == ms and hlc.counter(s) == c and hlc.is_valid(s)


@given(walls, st.integers(0, COUNTER_MAX), walls, st.integers(1, 3 * COUNTER_MAX))
def test_a_batch_of_stamps_is_what_as_many_ticks_give(last_ms, last_counter, wall, n):
    one_by_one, at_once = (
        Clock(last=pack(last_ms, last_counter)),
        Clock(last=pack(last_ms, last_counter)),
    )
    expected = [one_by_one.tick(wall) for _ in range(n)]
    first = at_once.tick_many(wall, n)
    assert expected == list(range(first, first + n)) and at_once.last == one_by_one.last
