"""Benchmark mode's timing: loop hooks that time every step, warm-up kept apart.

Benchmark mode runs the same parts through the same `Loop` as training, one
step per block (`steps_per_loop=1`), so each block is one synchronised step;
these hooks read the clock at block start and stop.
"""
import time

from mlbench.bench import stats
from mlbench.training.callbacks import Callback


class StepTimer(Callback):
    """Durations of every block (= step) since the last `reset`; prints the page's lines.

    Args:
      num_warmup: steps at the start of each run that are timed apart and excluded.
      global_batch_size: images in one step, over all devices.
      clock: the timer (tests inject a fake one).
      log / display_every: tf_cnn_benchmarks' `Step  Img/sec` lines every N timed steps.
    """

    def __init__(self, num_warmup, global_batch_size, clock=time.perf_counter, log=None,
                 display_every=10, unit="images"):
        self.num_warmup, self.global_batch_size, self.unit = num_warmup, global_batch_size, unit
        self.clock, self.log, self.display_every = clock, log, display_every
        self.reset()

    def reset(self):
        self.durations, self._start, self._first_timed, self._last_stop = [], None, None, None

    def on_block_start(self, step, num_steps):
        self._start = self.clock()
        if len(self.durations) == self.num_warmup:
            self._first_timed = self._start

    def on_block_stop(self, step, logs=None):
        self._last_stop = self.clock()
        self.durations.append(self._last_stop - self._start)
        timed = self.timed()
        if self.log and timed and len(timed) % self.display_every == 0:
            self.log(f"{len(timed)}\t"
                     f"{stats.run_stats(timed, self.global_batch_size).line(self.unit)}")

    def timed(self):
        return self.durations[self.num_warmup:]

    def run_stats(self):
        """The run's statistics; total images/sec over the wall time of the timed steps."""
        wall = self._last_stop - self._first_timed
        return stats.run_stats(self.timed(), self.global_batch_size, wall_time=wall)
