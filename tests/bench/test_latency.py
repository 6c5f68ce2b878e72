"""`bench.latency`: nearest-rank percentiles (LoadGen's rule, numpy's inverted_cdf),
throughput as examples over the timed wall time, warm-up untimed."""
import numpy as np
import pytest

from mlbench.bench import latency


@pytest.mark.parametrize("size", [1, 2, 3, 99, 100, 101, 1000])
def test_nearest_rank_equals_numpys_inverted_cdf(size):
    values = list(np.random.RandomState(size).lognormal(size=size))
    for percent in (1, 50, 90, 95, 99, 99.9, 100):
        expected = np.percentile(values, percent, method="inverted_cdf")
        assert latency.nearest_rank(values, percent) == expected, (size, percent)


def test_nearest_rank_is_never_a_mean_of_the_fastest():
    values = [1.0] * 9 + [100.0]  # DLE's "p90" (mean of the fastest 90 %) would be 1.0
    assert latency.nearest_rank(values, 90) == 1.0
    assert latency.nearest_rank(values, 91) == 100.0 and latency.nearest_rank(values, 50) == 1.0
    with pytest.raises(ValueError, match="empty"):
        latency.nearest_rank([], 50)


class Clock:
    """A fake clock: each batch takes the next of `durations`; nothing else takes time."""

    def __init__(self, durations):
        self.now, self.durations, self.calls = 0.0, list(durations), 0

    def __call__(self):
        return self.now

    def run_batch(self):
        self.now += self.durations[self.calls % len(self.durations)]
        self.calls += 1


def test_throughput_is_examples_over_timed_wall_time_and_warmup_is_untimed():
    clock = Clock([0.010, 0.010, 0.010, 0.050])  # a slow batch in four
    stats = latency.measure(clock.run_batch, batch_size=8, num_warmup=3, min_batches=8,
                            min_seconds=0.0, clock=clock)
    assert clock.calls == 3 + 8 and stats.warmup_batches == 3 and stats.batches == 8
    # timed batches (warm-up took 3 of the cycle): 50, 10, 10, 10, 50, 10, 10, 10 ms
    assert stats.wall_s == pytest.approx(0.160)
    assert stats.examples_per_sec == pytest.approx(8 * 8 / 0.160)  # not the mean of rates
    assert stats.mean_ms == pytest.approx(20.0)
    assert stats.p50_ms == pytest.approx(10.0) and stats.p90_ms == pytest.approx(50.0)
    assert stats.max_ms == pytest.approx(50.0) and stats.stopped_by == "count"


def test_the_time_budget_stops_a_slow_batch_and_says_so():
    clock = Clock([1.0])
    stats = latency.measure(clock.run_batch, batch_size=1, num_warmup=0, min_batches=100,
                            min_seconds=0.0, max_seconds=5.0, clock=clock)
    assert stats.batches == 5 and stats.stopped_by == "budget"
    assert "time budget" in latency.table([stats], "float32")


def test_min_seconds_keeps_timing_past_min_batches():
    clock = Clock([0.125])  # exact in binary: 8 batches make 1.0 s
    stats = latency.measure(clock.run_batch, batch_size=2, num_warmup=0, min_batches=2,
                            min_seconds=1.0, clock=clock)
    assert stats.batches == 8 and stats.wall_s == 1.0
