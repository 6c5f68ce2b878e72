"""When the loop stops the devices: the run's length, eval, checkpoint and target, in
optimizer steps. The plan resolves it once (epochs → steps); the loop reads it as is."""
import dataclasses
from typing import Dict, Optional


@dataclasses.dataclass(frozen=True)
class Cadence:
    """Lengths in optimizer steps (0 = never / only at the end), and the target.

    Attributes:
      train_steps: stop after this many steps in total (resumed steps count).
      steps_per_loop: steps inside one `tf.function` call between host checks.
      eval_every: evaluate every this many steps (0 = only at the end, with eval data).
      eval_offset: evals happen at eval_offset + k·eval_every (MLPerf's eval offset).
      checkpoint_every: save every this many steps (0 = at evals and the end).
      target: {metric: value}; stop at the first eval where every metric ≥ value.
      keep_best: {metric: 'max' | 'min'}: keep the best eval's checkpoint.
      epoch_steps: steps in one pass over the training data when the run is counted in
        epochs (Keras callbacks' epochs end there); 0: their epochs are eval periods.
    """
    train_steps: int
    steps_per_loop: int = 100
    eval_every: int = 0
    eval_offset: int = 0
    checkpoint_every: int = 0
    target: Optional[Dict[str, float]] = None
    keep_best: Optional[Dict[str, str]] = None
    epoch_steps: int = 0

    def epoch_due(self, step):
        return bool(self.epoch_steps) and step % self.epoch_steps == 0

    def eval_due(self, step):
        if not self.eval_every or step < self.eval_offset:
            return False
        return (step - self.eval_offset) % self.eval_every == 0

    def next_eval(self, step):
        """The first eval step after `step`."""
        if step < self.eval_offset:
            return self.eval_offset
        return self.eval_offset + ((step - self.eval_offset) // self.eval_every + 1) * self.eval_every

    def checkpoint_due(self, step):
        """At the end, every `checkpoint_every` steps, or else at each eval (offset
        included: the evals of an MLPerf run with an eval offset each get one)."""
        if step >= self.train_steps:
            return True
        if self.checkpoint_every:
            return step % self.checkpoint_every == 0
        return self.eval_due(step)

    def next_boundary(self, step, evaluates):
        """The next step at which the host must stop: an eval (when `evaluates`), a
        checkpoint, the end of an epoch, the end of a loop, or the end of the run."""
        ends = [self.train_steps, step + self.steps_per_loop]
        if self.eval_every and evaluates:
            ends.append(self.next_eval(step))
        if self.checkpoint_every:
            ends.append((step // self.checkpoint_every + 1) * self.checkpoint_every)
        if self.epoch_steps:
            ends.append((step // self.epoch_steps + 1) * self.epoch_steps)
        return min(ends)
