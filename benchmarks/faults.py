"""Fault injection: each fault mlbench claims to survive, injected N times on small real
runs (`mlbench train` processes on the bundled digits), one row per fault:

- tries; runs that ended at the same final weights as a straight run (max |Δ| ≤ 1e-5);
- runs or checkpoints lost (a finished run's steps redone, a checkpoint of the run gone);
- leftovers on disk (`*_temp` folders, worker temporary directories, a held lock);
- whether every message named a path.

A changed model, batch or learning rate on a used model_dir must be refused (exit 2,
naming the change and the folder) with the folder byte-for-byte unchanged, and the first
command must then resume to the straight run's weights; a truncated run.json must be
moved aside, named, and the run resume from its checkpoints.

    .venv/bin/python benchmarks/faults.py              # 3 tries per fault
    .venv/bin/python benchmarks/faults.py --tries 10 --faults sigkill,two_writers

The disk-full rows need a small tmpfs (`mount -t tmpfs`, root); without it they say so.
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1",
       "CUDA_VISIBLE_DEVICES": ""}
STEPS = 200


def command(model_dir, steps=STEPS):
    return [sys.executable, "-m", "mlbench", "train", "--model=simple_cnn", "--data=digits",
            "--model_options=image_size=8", "--global_batch_size=32", "--precision=float32",
            f"--train_steps={steps}", "--steps_per_loop=5", "--checkpoint_every=20",
            f"--model_dir={model_dir}"]


def train(model_dir, steps=STEPS):
    return subprocess.run(command(model_dir, steps), cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=600)


def weights(model_dir):
    import tensorflow as tf
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(f"{model_dir}/checkpoints"))
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
            if "model" in n and "OBJECT_GRAPH" not in n}


def same(a, b):
    return sorted(a) == sorted(b) and all(np.abs(a[n] - b[n]).max() <= 1e-5 for n in a)


def leftovers(model_dir):
    found = glob.glob(f"{model_dir}/checkpoints/*_temp")
    lock = os.path.join(model_dir, ".lock")
    if os.path.exists(lock) and open(lock).read().strip():
        found.append(lock)
    return found


def _until_step(model_dir, signum, at_step, jitter_s):
    """Starts a run and sends `signum` once its progress passes `at_step` (+ jitter)."""
    process = subprocess.Popen(command(model_dir), cwd=REPO, env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    for line in process.stdout:
        found = re.match(r"step (\d+)/", line)
        if found and int(found.group(1)) >= at_step:
            time.sleep(jitter_s)
            process.send_signal(signum)
            break
    out, err = process.communicate(timeout=300)
    return process.returncode, err


# --- one function per fault: (ended at the straight run's weights, lost, messages) -------

def sigkill(folder, straight, rng):
    run = os.path.join(folder, "run")
    _until_step(run, signal.SIGKILL, rng.randint(10, 150), rng.random() * 0.3)
    again = train(run)
    return again.returncode == 0, [], [again.stderr[-300:]] if again.returncode else []


def sigint(folder, straight, rng):
    run = os.path.join(folder, "run")
    code, err = _until_step(run, signal.SIGINT, rng.randint(10, 150), 0)
    named = "SIGINT received: stopping at step" in err
    again = train(run)
    return again.returncode == 0 and code == 130, [], [] if named else ["no acknowledgement"]


def two_writers(folder, straight, rng):
    """A second run on the model_dir of a live one (a long run, so that it is live): the
    second must be refused by name, the first must finish with all its checkpoints."""
    run, long = os.path.join(folder, "run"), 10 * STEPS
    first = subprocess.Popen(command(run, long), cwd=REPO, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    for line in first.stdout:
        if re.match(r"step \d+/", line):
            break
    second = train(run)
    live = first.poll() is None
    first.communicate(timeout=900)
    named = second.returncode == 2 and "is in use by pid" in second.stderr and live
    finished = json.load(open(os.path.join(run, "result.json")))["steps"] == long
    kept = os.path.exists(os.path.join(run, "checkpoints", f"ckpt-{long}.index"))
    return None if not live else (first.returncode == 0 and finished and kept), [], \
        [] if named else [second.stderr[-300:]]


def _half_then(folder, damage):
    run = os.path.join(folder, "run")
    train(run, STEPS // 2)
    message = damage(os.path.join(run, "checkpoints"))
    again = train(run)
    lost = [] if "resumed from step" in again.stdout else ["restarted from step 1"]
    return again.returncode == 0, lost, [message] if message else []


def state_removed(folder, straight, rng):
    return _half_then(folder, lambda c: os.remove(os.path.join(c, "checkpoint")))


def state_garbled(folder, straight, rng):
    def garble(c):
        with open(os.path.join(c, "checkpoint"), "wb") as f:
            f.write(bytes(rng.randrange(256) for _ in range(200)))
    return _half_then(folder, garble)


def _newest_data(c):
    steps = sorted(int(m.group(1)) for m in (re.match(r"ckpt-(\d+)\.index", f)
                                             for f in os.listdir(c)) if m)
    return glob.glob(os.path.join(c, f"ckpt-{steps[-1]}.data-*"))[0]


def newest_truncated(folder, straight, rng):
    def truncate(c):
        path = _newest_data(c)
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
    return _half_then(folder, truncate)


def newest_checksum(folder, straight, rng):
    def flip(c):
        path = _newest_data(c)
        raw = bytearray(open(path, "rb").read())
        at = rng.randrange(len(raw) // 4, len(raw) - 64)
        for i in range(at, at + 32):
            raw[i] ^= 0xFF
        open(path, "wb").write(bytes(raw))
    return _half_then(folder, flip)


def malformed_result(folder, straight, rng):
    """A garbled result.json against a good one: compare's gate must fail, naming it."""
    good, bad = os.path.join(folder, "good"), os.path.join(folder, "bad")
    shutil.copytree(straight, good)
    shutil.copytree(straight, bad)
    data = json.load(open(os.path.join(bad, "result.json")))
    field = rng.choice(["final_metrics", "history", "steps", "ran"])
    data[field] = "garbage"
    json.dump(data, open(os.path.join(bad, "result.json"), "w"))
    out = subprocess.run([sys.executable, "-m", "mlbench", "compare", good, bad,
                          "--fail_on_regression=5%"], cwd=REPO, env=ENV,
                         capture_output=True, text=True, timeout=300)
    named = out.returncode != 0 and os.path.join(bad, "result.json") in out.stderr
    return out.returncode != 0, [], [] if named else [out.stderr[-300:]]


def disk_full(folder, straight, rng):
    """A run on a tmpfs too small for its checkpoints: named, then resumed elsewhere."""
    mount = os.path.join(folder, "small")
    os.makedirs(mount)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", mount],
                      capture_output=True).returncode:
        return None, [], []
    try:
        run = os.path.join(mount, "run")
        first = train(run)
        named = first.returncode != 0 and "the disk is full" in first.stderr and \
            mount in first.stderr
        moved = os.path.join(folder, "run")
        shutil.copytree(run, moved, ignore=shutil.ignore_patterns(".lock"))
    finally:
        subprocess.run(["umount", mount], capture_output=True)
    again = train(moved)
    return again.returncode == 0, [], [] if named else [first.stderr[-300:]]


def _files(folder):
    """{relative path: bytes} of every file under `folder` but the lock (a model_dir's
    whole content, to tell that a refusal left it as it was)."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            if name != ".lock":
                path = os.path.join(root, name)
                found[os.path.relpath(path, folder)] = open(path, "rb").read()
    return found


def _refused_then_resumed(folder, flag, named):
    """Half a run, then the same model_dir with `flag` changed: refused with exit 2 naming
    the change (`named`), nothing in the folder changed; then the same command as the
    first resumes and finishes (the straight run's weights)."""
    run = os.path.join(folder, "run")
    train(run, STEPS // 2)
    before = _files(run)
    changed = subprocess.run(command(run) + [flag], cwd=REPO, env=ENV, capture_output=True,
                             text=True, timeout=600)
    mixed = [] if _files(run) == before else ["the refused run changed the model_dir"]
    again = train(run)
    lost = [] if "resumed from step" in again.stdout else ["restarted from step 1"]
    said = changed.returncode == 2 and named in changed.stderr and run in changed.stderr
    return again.returncode == 0 and not mixed, lost + mixed, \
        [] if said else [changed.stderr[-300:]]


def another_model(folder, straight, rng):
    return _refused_then_resumed(folder, "--model=mlp", "model 'simple_cnn' → 'mlp'")


def another_batch(folder, straight, rng):
    return _refused_then_resumed(folder, "--global_batch_size=16",
                                 "global_batch_size 32 → 16")


def another_learning_rate(folder, straight, rng):
    return _refused_then_resumed(folder, f"--learning_rate={rng.choice([0.05, 0.2])}",
                                 "optimizer.learning_rate")


def run_json_truncated(folder, straight, rng):
    """run.json cut at a random byte between a 100-step run and its continuation: named,
    moved aside, and the run resumes from its checkpoints."""
    run = os.path.join(folder, "run")
    train(run, STEPS // 2)
    path = os.path.join(run, "run.json")
    text = open(path).read()
    open(path, "w").write(text[:rng.randrange(1, len(text) - 1)])
    again = train(run)
    lost = [] if "resumed from step" in again.stdout else ["restarted from step 1"]
    aside = glob.glob(path + ".bad-*")
    said = "is not a well-formed run record" in again.stdout + again.stderr and \
        bool(aside) and aside[0] in again.stdout + again.stderr
    return again.returncode == 0 and bool(aside), lost, [] if said else ["not named"]


FAULTS = {"sigkill": sigkill, "sigint": sigint, "two_writers": two_writers,
          "state_removed": state_removed, "state_garbled": state_garbled,
          "newest_truncated": newest_truncated, "newest_checksum": newest_checksum,
          "malformed_result": malformed_result, "disk_full": disk_full,
          "another_model": another_model, "another_batch": another_batch,
          "another_learning_rate": another_learning_rate,
          "run_json_truncated": run_json_truncated}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--faults", default="", help="comma-separated (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    root = tempfile.mkdtemp(prefix="mlbench_faults_")
    straight = os.path.join(root, "straight")
    assert train(straight).returncode == 0
    reference = weights(straight)
    print("| fault | tries | same final weights as a straight run | runs or checkpoints "
          "lost | leftovers on disk | every message named a path |")
    print("|---|---|---|---|---|---|")
    for name, fault in FAULTS.items():
        if args.faults and name not in args.faults.split(","):
            continue
        same_weights, lost, left, unnamed, ran = 0, 0, 0, 0, 0
        for i in range(args.tries):
            folder = os.path.join(root, f"{name}_{i}")
            os.makedirs(folder)
            ok, lost_here, bad_messages = fault(folder, straight, rng)
            if ok is None:  # the fault could not be set up here (no tmpfs; a run too short)
                break
            ran += 1
            run = os.path.join(folder, "run")
            compares = name not in ("malformed_result", "two_writers")
            same_weights += bool(ok and (not compares or same(weights(run), reference)))
            lost += len(lost_here)
            left += len(leftovers(run)) if name != "malformed_result" else 0
            unnamed += bool(bad_messages)
        if not ran:
            print(f"| {name} | 0 | not run: no small tmpfs could be mounted (needs root) "
                  "| | | |", flush=True)
            continue
        weights_cell = {"malformed_result": f"gate failed {same_weights}/{ran}",
                        "two_writers": f"first run intact {same_weights}/{ran}"}.get(
                            name, f"{same_weights}/{ran}")
        print(f"| {name} | {ran} | {weights_cell} | {lost} | {left} | "
              f"{'yes' if not unnamed else f'no ({unnamed})'} |", flush=True)
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
