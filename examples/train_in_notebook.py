"""Train to a target in a notebook: no flags, call twice, inspect the result."""
import mlbench

result = mlbench.train(model="simple_cnn", data="mnist", global_batch_size=64,
                       train_epochs=30, eval_every_epochs=1, target={"top1": 0.97},
                       learning_rate=0.02)
print(result.reached_target, result.time_to_quality_s, result.examples_per_second)
print(result.ran)          # precision, jit_compile, strategy, replicas, micro-batches

# Gradient accumulation: 4 micro-batches of 16 per step, one update per step.
again = mlbench.train(model="simple_cnn", data="mnist", global_batch_size=64,
                      gradient_accumulation_steps=4, train_steps=200, learning_rate=0.02)
print(again.final_metrics)
