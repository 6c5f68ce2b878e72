"""A worker of the multi-worker test: trains the MLP on a fixed set and saves its weights.

Run by `mlbench launch` (TF_CONFIG set) or alone (single process). The train
split holds exactly one global batch, so every step sees the same examples
however they are sharded across workers.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402

import mlbench  # noqa: E402
from mlbench.data.bundled import array_source  # noqa: E402


def die_later(seconds):
    """Worker 1 kills itself with SIGKILL mid-run (the launcher must notice)."""
    import signal
    import threading
    threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()


def stop_later(seconds):
    """Worker 1 freezes itself with SIGSTOP mid-run: alive, but never answers again."""
    import signal
    import threading
    threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGSTOP)).start()


def term_later(seconds):
    """Worker 1 gets SIGTERM mid-run, as one pod does when its node is preempted."""
    import signal
    import threading
    threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()


def main(out_dir, strategy, steps):
    second_worker = '"index": 1' in os.environ.get("TF_CONFIG", "")
    if os.environ.get("DIE_AFTER_S") and second_worker:
        die_later(float(os.environ["DIE_AFTER_S"]))
    if os.environ.get("STOP_AFTER_S") and second_worker:
        stop_later(float(os.environ["STOP_AFTER_S"]))
    if os.environ.get("TERM_AFTER_S") and second_worker:
        term_later(float(os.environ["TERM_AFTER_S"]))
    rng = np.random.RandomState(0)
    x = rng.normal(size=(40, 16)).astype(np.float32)
    y = x[:, :4].argmax(1).astype(np.int32)
    source = array_source("vectors", x, y, eval_fraction=0.2, num_classes=4, kind="vector")
    try:
        result = train(source, strategy, steps, out_dir)
    except KeyboardInterrupt as interrupted:  # RunInterrupted: its code, as the CLI exits
        sys.exit(getattr(interrupted, "exit_code", 130))
    task = os.environ.get("TF_CONFIG") and __import__("json").loads(os.environ["TF_CONFIG"])["task"]
    name = f"{task['type']}_{task['index']}" if task else "single"
    np.savez(os.path.join(out_dir, f"{name}.npz"),
             *[v.numpy() for v in result.model.trainable_variables])
    print(f"{name} done: steps={result.steps} strategy={result.ran['strategy']} "
          f"replicas={result.ran['replicas']}")


def train(source, strategy, steps, out_dir):
    return mlbench.train(model="mlp", data=source, global_batch_size=32, train_steps=steps,
                         steps_per_loop=2, strategy=strategy, precision="float32",
                         learning_rate=0.5, model_dir=os.path.join(out_dir, "run"),
                         checkpoint_every=int(os.environ.get("CHECKPOINT_EVERY", "0")),
                         verbose=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
