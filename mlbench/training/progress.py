"""Progress display: a bar (tqdm) in terminals and notebooks, one line per block of steps elsewhere.

Logs and CI get plain lines (a bar's carriage returns would garble them); a
terminal or a Jupyter kernel gets a bar with loss, examples/sec and ETA.
"""
import sys


def interactive(stream=None):
    stream = stream or sys.stdout
    return "ipykernel" in sys.modules or (hasattr(stream, "isatty") and stream.isatty())


def plain_line(step, total_steps, loss, lr, examples_per_second, global_batch_size):
    """One progress line; before a rate is measured (the first, compiling step) the rate
    and the ETA say '—', never nan."""
    eps = examples_per_second
    rate = f"{eps:.1f}" if eps else "—"
    eta = f"{(total_steps - step) * global_batch_size / eps:.0f}s" if eps else "—"
    return (f"step {step}/{total_steps}  loss {loss:.4f}  lr {lr:.4g}  "
            f"examples/sec {rate}  ETA {eta}")


class Progress:
    """Step updates and messages of one run.

    Args:
      total_steps: the run's length in steps.
      global_batch_size: examples per step (for the ETA of plain lines).
      bar: draw a bar (default: when the output is a terminal or a notebook).
    """

    def __init__(self, total_steps, global_batch_size, bar=None):
        self.total_steps, self.global_batch_size = total_steps, global_batch_size
        self.bar = None
        if interactive() if bar is None else bar:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=total_steps, unit="step", dynamic_ncols=True, leave=True)

    def step(self, step, loss, lr, examples_per_second):
        if self.bar is not None:
            self.bar.update(step - self.bar.n)
            self.bar.set_postfix(loss=f"{loss:.4f}", lr=f"{lr:.3g}",
                                 examples_per_sec=f"{examples_per_second or 0:.1f}")
            return
        print(plain_line(step, self.total_steps, loss, lr, examples_per_second,
                         self.global_batch_size), flush=True)

    def write(self, text):
        if self.bar is not None:
            self.bar.write(text)
        else:
            print(text, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()  # a bar left open by an error would redraw over the traceback
