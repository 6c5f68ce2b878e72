"""Help written for the command line, for the arguments whose docstring speaks Python.

`mlbench train` and `mlbench benchmark` make one flag per argument of `mlbench.train`
and `mlbench.benchmark`, with the docstring's text as help. Where that text describes
Python values (a function, a tf.data.Dataset, `TrainResult` fields, other arguments by
their Python names), the flag's help comes from here instead: what a shell user can
type, the choices and where to list them. `tests/test_cli.py` checks every flag's help
for Python-only wording.
"""

TRAIN = {
    "model": "a model name (`mlbench list models`), or one your own module registers "
             "(--import=module).",
    "data": "a data name (`mlbench list data`): bundled real data (mnist, digits), "
            "synthetic, imagenet or bert_pretraining TFRecords in --data_dir, or "
            "tfds:<name> prepared offline. Images of another size are resized to the "
            "model's input.",
    "strategy": "one of auto, one_device, mirrored, central_storage, "
                "multi_worker_mirrored, parameter_server, tpu; auto honours TF_CONFIG "
                "(several workers: multi_worker_mirrored).",
    "cluster": "where the cluster comes from: tf_config (TF_CONFIG, as `mlbench launch` "
               "and Kubeflow TFJobs set it) or slurm (an srun step).",
    "resume": "continue from the latest checkpoint in --model_dir (the first line says "
              "so); --noresume refuses a --model_dir that holds checkpoints.",
    "optimizer": "one of sgd, lars, adam, adamw, lamb (Model Garden's).",
    "learning_rate": "the base learning rate (the schedule's peak, after warm-up).",
    "optimizer_options": "the optimizer's other settings as key=value pairs, e.g. "
                         "momentum=0.9,weight_decay=1e-4,schedule=cosine,warmup_steps=100.",
    "loss": "for a model of your own: a Keras loss name such as mse or "
            "binary_crossentropy (default: cross-entropy on class labels).",
    "metrics": "for a model of your own: Keras metric names, comma-separated (e.g. "
               "mae,mse).",
    "keep_best": "metric=max or metric=min, e.g. top1=max: keep the best eval's checkpoint "
                 "in checkpoints/best (`mlbench evaluate --checkpoint=best`).",
    "eval_offset_epochs": "with --eval_every_epochs, evals at offset + k x every epochs "
                          "(MLPerf's eval offset).",
    "warmup": "compile and warm up on zeros before the run clock starts, then restore the "
              "initial state, so compile time stays out of the time to quality.",
    "init_checkpoint": "weights to start from when --model_dir has no checkpoint yet (a "
                       "Model Garden BERT pretrainer checkpoint, or an mlbench one).",
    "trace_dir": "write a TensorBoard profile of one block here and print where its time "
                 "went (matmul/conv, normalisation, elementwise, optimizer, idle).",
    "jit_compile": "compile the step with XLA: true, false or auto (auto: on GPU/TPU, off "
                   "on CPU; after XLA refuses the step it runs uncompiled, and the result "
                   "says so).",
    "precision": "one of float32, mixed_float16, mixed_bfloat16, auto (auto: bf16 on TPUs, "
                 "Ampere or newer GPUs and CPUs with AMX or AVX512-BF16; float16 on older "
                 "GPUs; else float32).",
    "verbose": "print progress lines and the result (--noverbose: only errors).",
}

BENCHMARK = {
    "model": "a model name (`mlbench list models`), or one your own module registers "
             "(--import=module).",
    "data": "synthetic (tensors made on the devices), real (ImageNet TFRecords in "
            "--data_dir), or any data name `mlbench train` takes (`mlbench list data`); "
            "real data puts the input pipeline into every timed step.",
    "precision": "one of float32, mixed_float16, mixed_bfloat16, auto (the same per-platform "
                 "choice `mlbench train --help` lists; the result records what ran).",
    "jit_compile": "compile the step with XLA: true, false or auto (auto: on GPU/TPU, off "
                   "on CPU; after XLA refuses the step it runs uncompiled, and the result "
                   "says so).",
    "num_warmup_batches": "steps timed apart before each run and left out of its figures "
                          "(tf_cnn_benchmarks: 10).",
    "num_batches": "timed steps per run (tf_cnn_benchmarks: 100).",
    "num_runs": "runs; the result is their mean and spread (the page: 5).",
    "display_every": "print a Step / Img/sec line every this many timed steps.",
    "trace_dir": "write a TensorBoard profile of one step here and print where its time "
                 "went.",
    "diagnose": "also time the same model on synthetic data of the same shape and, on "
                "more than one device, on one device: the diagnosis then says whether the "
                "input pipeline or the step sets the pace and where scaling is lost. "
                "Without it, real data's pipeline is still timed alone.",
    "optimizer": "the benchmark's optimizer: sgd (the page's only one).",
}
