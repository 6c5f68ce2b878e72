"""A task of the parameter-server tests: `mlbench.train` on real digits, strategy 'auto'.

Run by `mlbench launch --num_ps=1` (every task runs this script: the chief
coordinates, ps and workers serve). KILL_TASK="worker 1" (or "ps 0") makes
that task SIGKILL itself after KILL_AFTER_S seconds, once.
"""
import json
import os
import signal
import sys
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import mlbench  # noqa: E402


def kill_later_if_chosen(marker):
    """Once per test: a restarted task finds the marker and lives."""
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    if os.environ.get("KILL_TASK") == f"{task['type']} {task['index']}" and \
            not os.path.exists(marker):
        open(marker, "w").close()
        seconds = float(os.environ["KILL_AFTER_S"])
        threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()


def main(model_dir, steps):
    kill_later_if_chosen(os.path.join(os.path.dirname(model_dir), "killed_once"))
    result = mlbench.train(model="simple_cnn", data="digits", global_batch_size=32,
                           train_steps=steps, eval_every=steps, steps_per_loop=20,
                           precision="float32", learning_rate=0.05,
                           model_options={"image_size": 8}, model_dir=model_dir,
                           verbose=False)
    losses = [h["loss"] for h in result.history]
    print(f"chief done: steps={result.steps} strategy={result.ran['strategy']} "
          f"first_loss={losses[0]:.4f} last_loss={losses[-1]:.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
