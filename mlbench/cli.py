"""Command line: `mlbench train|...` — the only module that reads flags."""
import os
import sys

from absl import app, flags

FLAGS = flags.FLAGS
COMMANDS = ("train", "data", "benchmark", "mlperf", "launch")
DATA_KINDS = ("imagenet", "bert")

flags.DEFINE_multi_string("gin_file", [], "Gin files (searched as given, then under gin/).")
flags.DEFINE_multi_string("gin_bindings", [], "Gin bindings, e.g. 'train.train_steps=100'.")
flags.DEFINE_string("model_dir", None, "Run directory (checkpoints, summaries, configs).")
# `mlbench data imagenet|bert`: flag names avoid create_pretraining_data's own
# absl flags (max_seq_length, vocab_file, ...), which Model Garden defines on import.
flags.DEFINE_string("output_dir", None, "Where written records (data) or reports (benchmark) go.")
flags.DEFINE_enum("source", "digits", ["digits", "mnist", "photos"],
                  "mlbench data imagenet: which bundled real images to write.")
flags.DEFINE_integer("image_size", 32, "mlbench data imagenet: side of the written images.")
flags.DEFINE_integer("num_shards", 2, "mlbench data: train shards to write.")
flags.DEFINE_integer("seq_length", 128, "mlbench data bert: tokens per sequence.")
flags.DEFINE_integer("max_predictions", 20, "mlbench data bert: masked tokens per sequence.")
flags.DEFINE_integer("wordpiece_vocab_size", 2000, "mlbench data bert: target vocabulary size.")
flags.DEFINE_integer("duplicates", 5, "mlbench data bert: dupe factor (maskings per text).")


def _train():
    import mlbench
    kwargs = {"model_dir": FLAGS.model_dir} if FLAGS.model_dir else {}
    result = mlbench.train(gin_files=FLAGS.gin_file, gin_bindings=FLAGS.gin_bindings, **kwargs)
    return 0 if result.reached_target or not result.config.get("target") else 3


# `mlbench benchmark`: tf_cnn_benchmarks' flag names where they exist.
flags.DEFINE_string("model", None, "mlbench benchmark: model name.")
flags.DEFINE_integer("batch_size", None, "mlbench benchmark: per-device batch (page default).")
flags.DEFINE_integer("num_gpus", 1, "mlbench benchmark: devices (GPUs, else logical CPUs).")
flags.DEFINE_string("variable_update", None,
                    "parameter_server | replicated | distributed_replicated (page default).")
flags.DEFINE_string("local_parameter_device", None, "cpu | gpu (parameter_server).")
flags.DEFINE_string("all_reduce_spec", "auto",
                    "nccl | hierarchical_copy | reduction_to_one_device | auto.")
flags.DEFINE_string("data_dir", None, "ImageNet-format TFRecords; given = real data.")
flags.DEFINE_integer("num_batches", 100, "Timed steps per run.")
flags.DEFINE_integer("num_warmup_batches", 10, "Warm-up steps per run (not timed).")
flags.DEFINE_integer("num_runs", 5, "Runs per configuration.")
flags.DEFINE_bool("use_fp16", False, "Train in mixed_float16 (overrides --precision).")
flags.DEFINE_string("precision", "auto", "auto | float32 | mixed_float16 | mixed_bfloat16.")
flags.DEFINE_string("xla_compile", "auto", "auto | true | false.")
flags.DEFINE_bool("forward_only", False, "Time inference only.")
flags.DEFINE_string("suite", None, "A suite under gin/benchmarks/ (e.g. dgx1_p100).")


flags.DEFINE_integer("runs", 1, "mlbench mlperf: runs (seeds seed, seed+1, ...).")
flags.DEFINE_integer("seed", 0, "mlbench mlperf: seed of the first run.")


def _mlperf():
    from mlbench.mlperf.run import run_many
    if not FLAGS.gin_file:
        raise ValueError("`--gin_file` is required (e.g. mlperf/cpu/resnet_digits.gin).")
    records, _ = run_many(FLAGS.gin_file, FLAGS.gin_bindings, FLAGS.runs, FLAGS.seed,
                          FLAGS.output_dir or "runs/mlperf")
    return 0 if all(r.reached_target and r.checker_passed for r in records) else 3


flags.DEFINE_integer("num_workers", 2, "mlbench launch: local worker processes.")
flags.DEFINE_integer("num_ps", 0, "mlbench launch: local parameter-server processes.")
flags.DEFINE_float("launch_timeout_s", 0, "mlbench launch: stop everything after this (0 = never).")
flags.DEFINE_list("worker_hosts", [], "host:port of every worker (builds TF_CONFIG).")
flags.DEFINE_list("ps_hosts", [], "host:port of every parameter server.")
flags.DEFINE_integer("task_index", 0, "This process's index among the workers.")
flags.DEFINE_string("job_name", "worker", "This process's job: worker | ps | chief.")


def _launch(args):
    from mlbench.launch import launch
    code, failed = launch(args, FLAGS.num_workers, FLAGS.num_ps, FLAGS.launch_timeout_s or None)
    if failed:
        print(f"mlbench launch: {failed} failed (exit code {code}); stopped the others.",
              file=sys.stderr)
    return code


def _tf_config_from_flags():
    """--worker_hosts/--task_index (--ps_hosts) → TF_CONFIG, before TensorFlow starts."""
    if not FLAGS.worker_hosts:
        return
    from mlbench.distribute import tf_config_from_hosts
    os.environ["TF_CONFIG"] = tf_config_from_hosts(FLAGS.worker_hosts, FLAGS.task_index,
                                                   FLAGS.ps_hosts, FLAGS.job_name)


def _split_cpu(num_devices):
    """On a machine without GPUs, split the CPU into logical devices before TF starts."""
    import tensorflow as tf
    if num_devices > 1 and not tf.config.list_physical_devices("GPU"):
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)])


def _xla():
    value = FLAGS.xla_compile.lower()
    if value not in ("auto", "true", "false"):
        raise ValueError(f"`--xla_compile` ({FLAGS.xla_compile!r}) must be auto, true or false.")
    return "auto" if value == "auto" else value == "true"


def _benchmark():
    from mlbench import config as gin_config
    if FLAGS.suite:
        return _suite(gin_config)
    if not FLAGS.model:
        raise ValueError("`--model` (or `--suite`) is required.")
    _split_cpu(FLAGS.num_gpus)
    from mlbench.benchmark.bench import benchmark
    result = benchmark(
        FLAGS.model, FLAGS.batch_size, FLAGS.num_gpus, FLAGS.variable_update,
        FLAGS.local_parameter_device, FLAGS.all_reduce_spec,
        data="real" if FLAGS.data_dir else "synthetic", data_dir=FLAGS.data_dir,
        precision="mixed_float16" if FLAGS.use_fp16 else FLAGS.precision, jit_compile=_xla(),
        num_warmup_batches=FLAGS.num_warmup_batches, num_batches=FLAGS.num_batches,
        num_runs=FLAGS.num_runs, forward_only=FLAGS.forward_only)
    if FLAGS.output_dir:
        import json
        import os
        os.makedirs(FLAGS.output_dir, exist_ok=True)
        with open(os.path.join(FLAGS.output_dir, "result.json"), "w") as f:
            json.dump(result.to_dict(), f, indent=1, default=str)
    return 0


def _suite(gin_config):
    import gin
    from mlbench.benchmark import suite
    gin_config.parse([f"benchmarks/{FLAGS.suite}.gin"], FLAGS.gin_bindings)
    counts = gin.query_parameter("benchmark_suite.device_counts")
    _split_cpu(max(counts))
    bindings = {"data_dir": FLAGS.data_dir, "output_dir": FLAGS.output_dir}
    _, paths = suite.run_suite(**{k: v for k, v in bindings.items() if v})
    if paths:
        print("\n".join(f"wrote {p}" for p in paths.values()))
    return 0


def _data(kind):
    if kind not in DATA_KINDS:
        raise ValueError(f"`mlbench data` needs one of {list(DATA_KINDS)}; got {kind!r}.")
    if not FLAGS.output_dir:
        raise ValueError("`--output_dir` is required.")
    if kind == "imagenet":
        from mlbench.data.writers import write_bundled_imagenet
        train, evals = write_bundled_imagenet(FLAGS.output_dir, FLAGS.source, FLAGS.image_size,
                                              FLAGS.num_shards)
        print(f"wrote {len(train)} train and {len(evals)} validation shards to {FLAGS.output_dir}")
        return 0
    from mlbench.data.bert_writer import write_bert_pretraining
    out = write_bert_pretraining(FLAGS.output_dir, vocab_size=FLAGS.wordpiece_vocab_size,
                                 seq_length=FLAGS.seq_length,
                                 max_predictions=FLAGS.max_predictions,
                                 dupe_factor=FLAGS.duplicates, num_shards=FLAGS.num_shards)
    print(f"wrote {out['counts']} instances and {out['vocab']} to {FLAGS.output_dir}")
    return 0


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        raise app.UsageError(f"usage: mlbench {{{'|'.join(COMMANDS)}}} [flags]; "
                             f"got {argv[1:2] or 'nothing'}.")
    command = argv[1]
    try:
        if command == "launch":
            return _launch(argv[2:])
        _tf_config_from_flags()
        if command == "data":
            return _data(argv[2] if len(argv) > 2 else None)
        return {"train": _train, "benchmark": _benchmark, "mlperf": _mlperf}[command]()
    except (ValueError, TypeError) as e:
        print(f"mlbench {command}: error: {e}", file=sys.stderr)
        return 2


def run_main():
    app.run(main)
