"""Peak memory, reset per measurement: the process's resident high-water mark on a CPU
(VmHWM through /proc/self/clear_refs), carried by benchmark and train results."""
import numpy as np

import mlbench
from mlbench.results import files
from mlbench.training import memory


def test_the_high_water_mark_follows_an_allocation_and_resets():
    assert memory.reset_peak() == memory.CPU_PEAK
    before = memory.peak_mb()
    block = np.ones(200 * 2 ** 20 // 8)  # 200 MiB, touched
    high = memory.peak_mb()
    assert high - before >= 190
    del block
    memory.reset_peak()  # the mark drops to what is resident now
    assert memory.peak_mb() <= high - 150


def test_benchmark_and_train_results_carry_their_peak_and_what_it_measures(tmp_path):
    bench = mlbench.benchmark("mlp", batch_size=8, num_warmup_batches=1, num_batches=2,
                              num_runs=1, verbose=False)
    assert bench.memory == memory.CPU_PEAK and bench.peak_memory_mb > 0
    trained = mlbench.train(model="mlp", data="digits", global_batch_size=16, train_steps=4,
                            model_dir=str(tmp_path), verbose=False)
    assert trained.memory == memory.CPU_PEAK and trained.peak_memory_mb > 0
    _, _, stored = files.read(str(tmp_path))
    assert stored.peak_memory_mb == trained.peak_memory_mb
