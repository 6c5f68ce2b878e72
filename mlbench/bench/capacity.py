"""The largest batch that fits a memory budget, and the fastest one: `max_batch(...)`.

Doubling from `start` until a batch does not fit, then bisection between the last that
fit and the first that did not. Each probe is `mlbench infer` (or, with `train=True`,
`mlbench benchmark`: a training step) at one batch size in a child process, so that running out of memory kills the probe, never the caller; the
parent watches the child's resident memory and stops it past the budget (a GPU's own
out-of-memory error fails the probe the same way). A probe fits when it exits cleanly,
timed its batches, and its peak (`mlbench.training.memory`, measured in the child) is within
the budget.
"""
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

from mlbench.training import memory
from mlbench.results import files


@dataclasses.dataclass(frozen=True)
class Probe:
    batch_size: int
    fits: bool
    peak_memory_mb: Optional[float] = None
    examples_per_sec: Optional[float] = None
    why: str = ""  # why it does not fit
    memory: str = ""  # what the child says its peak measures


@dataclasses.dataclass(frozen=True)
class Capacity:
    """The search's outcome.

    Attributes:
      largest_batch: the largest batch that fit (None: not even `start`).
      fastest_batch: the batch with the most examples/sec among those that fit.
      budget_mb: the memory budget (MiB); memory: what the peaks measure.
      probes: every probe, in the order run.
      target_batch / accumulation_steps: with a target global batch for training, the
        fewest gradient accumulation steps whose micro-batch (target ÷ steps) fits.
    """
    model: str
    budget_mb: float
    memory: str
    largest_batch: Optional[int]
    fastest_batch: Optional[int]
    probes: List[Probe]
    target_batch: Optional[int] = None
    accumulation_steps: Optional[int] = None

    def lines(self):
        out = [f"{'batch':>7} {'fits':>5} {'peak MiB':>9} {'examples/sec':>13}  why not"]
        for p in sorted(self.probes, key=lambda p: p.batch_size):
            peak = "-" if p.peak_memory_mb is None else f"{p.peak_memory_mb:.0f}"
            rate = "-" if p.examples_per_sec is None else f"{p.examples_per_sec:.1f}"
            out.append(f"{p.batch_size:>7} {'yes' if p.fits else 'no':>5} {peak:>9} "
                       f"{rate:>13}  {p.why}")
        out.append(f"largest batch within {self.budget_mb:.0f} MiB ({self.memory}): "
                   f"{self.largest_batch}; fastest: {self.fastest_batch}")
        if self.target_batch:
            out.append(f"global batch {self.target_batch}: " + (
                f"{self.accumulation_steps} gradient accumulation step(s) of "
                f"{self.target_batch // self.accumulation_steps}"
                if self.accumulation_steps else "no micro-batch that divides it fits"))
        return out


def max_batch(model, precision="auto", memory_budget_mb=None, start=1, limit=65536,
              tolerance=0.0, jit_compile=False, timeout_s=600.0, train=False,
              target_batch=None, verbose=True):
    """Finds the largest batch of `model`'s inference (with `train`, its training step)
    within `memory_budget_mb` (MiB; default the memory the machine has available) by
    doubling from `start` up to `limit`, then bisection until the gap is at most
    `tolerance` × the batch that fits (0: exact). With `target_batch` (training), also
    the fewest gradient accumulation steps that reach it with a micro-batch that fits.

    Raises:
      ValueError: bad arguments, before any probe starts.
    """
    budget = memory_budget_mb or memory.available_mb()
    _check(model, budget, start, limit, tolerance, target_batch)
    probes = []

    def probe(batch):
        probes.append(_probe(model, batch, precision, jit_compile, budget, timeout_s, train))
        if verbose:
            print(Capacity(model, budget, "", None, None, probes[-1:]).lines()[1],
                  flush=True)
        return probes[-1].fits
    fit, fail = None, None
    batch = start
    while batch <= limit:
        if not probe(batch):
            fail = batch
            break
        fit, batch = batch, batch * 2
    while fit is not None and fail is not None and fail - fit > max(1, tolerance * fit):
        middle = (fit + fail) // 2
        fit, fail = (middle, fail) if probe(middle) else (fit, middle)
    fitting = [p for p in probes if p.fits]
    fastest = max(fitting, key=lambda p: p.examples_per_sec).batch_size if fitting else None
    measured = next((p.memory for p in probes if p.memory), "not measured")
    result = Capacity(str(model), budget, measured, fit, fastest, probes, target_batch,
                      accumulation_steps(target_batch, fit) if target_batch else None)
    if verbose:
        print("\n".join(result.lines()[len(probes) + 1:]))
    return result


def accumulation_steps(target_batch, largest_batch):
    """The fewest steps k dividing `target_batch` whose micro-batch target ÷ k is at most
    `largest_batch` (mlbench's accumulation needs the global batch to divide evenly);
    None when none does (or nothing fit)."""
    if not largest_batch:
        return None
    return next((k for k in range(1, target_batch + 1)
                 if target_batch % k == 0 and target_batch // k <= largest_batch), None)


def _check(model, budget, start, limit, tolerance, target_batch=None):
    if not isinstance(model, str):
        raise ValueError(f"`model` ({model!r}) must be a zoo name, a model_dir or an export "
                         "directory: each probe runs it in a child process.")
    if budget is None or not budget > 0:
        raise ValueError(f"`memory_budget_mb` ({budget!r}) must be > 0 (MiB); this machine "
                         "does not say what it has available.")
    if not (isinstance(start, int) and start >= 1 and isinstance(limit, int) and
            limit >= start):
        raise ValueError(f"`start` ({start!r}) and `limit` ({limit!r}) must be integers with "
                         "1 <= start <= limit.")
    if not 0 <= tolerance < 1:
        raise ValueError(f"`tolerance` ({tolerance!r}) must be in [0, 1).")
    if target_batch is not None and not (isinstance(target_batch, int) and target_batch >= 1):
        raise ValueError(f"`target_batch` ({target_batch!r}) must be an integer >= 1.")


def _probe(model, batch, precision, jit_compile, budget, timeout_s, train=False):
    """`mlbench infer` (with `train`, `mlbench benchmark`) at one batch in a child
    process, stopped past the budget."""
    with tempfile.TemporaryDirectory() as folder:
        command = ([sys.executable, "-m", "mlbench", "benchmark", f"--model={model}",
                    f"--batch_size={batch}", "--num_warmup_batches=1", "--num_batches=2",
                    "--num_runs=1"] if train else
                   [sys.executable, "-m", "mlbench", "infer", model, f"--batch_sizes={batch}",
                    "--num_warmup_batches=1", "--min_batches=3", "--min_seconds=0"])
        command += [f"--precision={precision}", f"--output_dir={folder}/out"]
        child = subprocess.Popen(command + (["--jit_compile"] if jit_compile else []),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
        over = _watch(child, budget, timeout_s)
        stderr = child.stderr.read()
        child.stderr.close()
        if over:
            return Probe(batch, False, why=over)
        if child.returncode != 0:
            last = (stderr.strip().splitlines() or ["no message"])[-1][:160]
            return Probe(batch, False, why=f"exit code {child.returncode}: {last}")
        kind, _, record = files.read(os.path.join(folder, "out"),
                                     expected=("benchmark", "inference"))
    if kind == "benchmark":
        return _fitting(batch, record.peak_memory_mb, record.images_per_sec.mean, budget,
                        record.memory)
    if not record.rows:
        return Probe(batch, False, why="; ".join(record.skipped.values()))
    return _fitting(batch, record.rows[0].peak_memory_mb, record.rows[0].examples_per_sec,
                    budget, record.memory)


def _fitting(batch, peak, rate, budget, measured):
    if peak is not None and peak > budget:
        return Probe(batch, False, peak, rate, f"peak {peak:.0f} MiB over the budget",
                     measured)
    return Probe(batch, True, peak, rate, memory=measured)


def _watch(child, budget, timeout_s, every_s=0.02):
    """Waits for `child`; stops it (SIGKILL) once its resident memory passes `budget` or
    `timeout_s` passes, and says which; '' when it ended by itself."""
    deadline = time.monotonic() + timeout_s
    while child.poll() is None:
        resident = memory.resident_mb(child.pid)
        if resident is not None and resident > budget:
            child.kill()
            child.wait()
            return f"stopped at {resident:.0f} MiB resident, over the budget"
        if time.monotonic() > deadline:
            child.kill()
            child.wait()
            return f"no answer within {timeout_s:g} s"
        time.sleep(every_s)
    return ""
