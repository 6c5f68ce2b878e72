"""Train to a target in a notebook: no flags, call twice, inspect and export the result.

MLBENCH_EXAMPLE_TINY=1 shortens both runs (the tests do).
"""
import os
import tempfile

import mlbench

TINY = bool(os.environ.get("MLBENCH_EXAMPLE_TINY"))
result = mlbench.train(model="simple_cnn", data="mnist", global_batch_size=64,
                       train_epochs=1 if TINY else 30, eval_every_epochs=1,
                       target={"top1": 0.5 if TINY else 0.97}, learning_rate=0.02)
print(result.reached_target, result.time_to_quality_s, result.examples_per_second)
print(result.ran)          # precision, jit_compile, strategy, replicas, micro-batches
result.export(os.path.join(tempfile.mkdtemp(), "simple_cnn"))  # SavedModel + tf_keras model

# Gradient accumulation: 4 micro-batches of 16 per step, one update per step.
again = mlbench.train(model="simple_cnn", data="mnist", global_batch_size=64,
                      gradient_accumulation_steps=4, train_steps=20 if TINY else 200,
                      learning_rate=0.02)
print(again.final_metrics)
