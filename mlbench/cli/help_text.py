"""The help of every `mlbench train` and `mlbench benchmark` flag, written for the shell.

The flags themselves come from the signatures of `mlbench.train` and
`mlbench.benchmark` (name, type, default); their help comes from here and nowhere
else: what a shell user can type, the choices and where to list them (the Python
docstrings describe Python values). A flag without an entry here is an error when
the parser is built, and `tests/cli/test_cli.py` checks every flag's help for Python-only
wording.
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
               "and Kubeflow TFJobs set it), slurm (an srun step) or jobset (a pod of "
               "`mlbench launch --emit=jobset|trainjob`: from its own identity).",
    "resume": "continue from the latest checkpoint in --model_dir (the first line says "
              "so); --noresume refuses a --model_dir that holds checkpoints.",
    "optimizer": "one of sgd, lars, adam, adamw, lamb (Model Garden's); default sgd, or "
                 "what a compiled model of your own was compiled with.",
    "learning_rate": "the base learning rate (the schedule's peak, after warm-up); default "
                     "0.1 for the zoo, Keras' default for your own model's optimizer.",
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
    "global_batch_size": "examples per optimizer step, over all devices and micro-batches "
                         "(each device gets global / devices / accumulation).",
    "gradient_accumulation_steps": "micro-batches per device per step (one update per step).",
    "num_devices": "devices to train on (tf_cnn_benchmarks' --num_gpus); on a machine "
                   "without a GPU the CPU is split into this many logical devices.",
    "all_reduce": "how gradients are summed across devices: auto, nccl, hierarchical_copy "
                  "or reduction_to_one_device.",
    "train_steps": "length of the run in steps (give this or --train_epochs).",
    "train_epochs": "length of the run in epochs (give this or --train_steps).",
    "steps_per_epoch": "steps in one epoch (default: train examples / global batch); "
                       "what --train_epochs and --eval_every_epochs count.",
    "eval_every": "evaluate every N steps (default: once, at the end); data without an "
                  "eval set (synthetic) is never evaluated.",
    "eval_every_epochs": "evaluate every X epochs (default: once, at the end).",
    "steps_per_loop": "steps per host round trip: one progress line, one NaN/Inf check "
                      "and the earliest point to evaluate or checkpoint, every N steps.",
    "target": "stop at the first eval that meets it, as metric=value pairs, e.g. "
              "top1=0.97; exit code 3 when the run ends without it.",
    "model_dir": "the run's directory: checkpoints, summaries (train/, validation/), "
                 "configs and result.json; parents are created.",
    "seed": "seeds the weights and the data order.",
    "model_options": "the model's own settings as key=value pairs (`mlbench list models` "
                     "names the models; e.g. image_size=32,num_classes=10).",
    "data_dir": "where the data's files are (TFRecords for imagenet and bert_pretraining, "
                "the tfds folder for tfds:<name>).",
    "data_options": "the data's own settings as key=value pairs (e.g. image_size=32).",
    "label_smoothing": "label smoothing of the classification loss (0 to 1).",
    "checkpoint_every": "steps between checkpoints (default: at each eval and at the end).",
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
    "batch_size": "per-device batch (default: the page's, 64; AlexNet 512).",
    "num_devices": "GPUs, else logical CPU devices (tf_cnn_benchmarks' --num_gpus); on a "
                   "machine without a GPU the CPU is split into this many.",
    "variable_update": "parameter_server, replicated or distributed_replicated (default: "
                       "the model's on the DGX-1 page); with ps tasks in TF_CONFIG "
                       "parameter_server runs across processes, on one host it keeps the "
                       "variables on --local_parameter_device.",
    "local_parameter_device": "cpu or gpu: where parameter_server keeps the variables.",
    "all_reduce": "how gradients are summed across devices: auto, nccl, hierarchical_copy "
                  "or reduction_to_one_device (tf_cnn_benchmarks' --all_reduce_spec).",
    "data_dir": "ImageNet-format TFRecords for --data=real (`mlbench data imagenet` "
                "writes some from bundled images).",
    "forward_only": "time inference instead of training.",
    "num_classes": "classes of the model's head (the page's 1000).",
    "seed": "seeds the weights and the synthetic data.",
}
