"""Command line: `mlbench train|...` — the only module that reads flags."""
import sys

from absl import app, flags

FLAGS = flags.FLAGS
COMMANDS = ("train", "data")
DATA_KINDS = ("imagenet", "bert")

flags.DEFINE_multi_string("gin_file", [], "Gin files (searched as given, then under gin/).")
flags.DEFINE_multi_string("gin_bindings", [], "Gin bindings, e.g. 'train.train_steps=100'.")
flags.DEFINE_string("model_dir", None, "Run directory (checkpoints, summaries, configs).")
# `mlbench data imagenet|bert`: flag names avoid create_pretraining_data's own
# absl flags (max_seq_length, vocab_file, ...), which Model Garden defines on import.
flags.DEFINE_string("output_dir", None, "mlbench data: where to write the TFRecords.")
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
        if command == "data":
            return _data(argv[2] if len(argv) > 2 else None)
        return {"train": _train}[command]()
    except (ValueError, TypeError) as e:
        print(f"mlbench {command}: error: {e}", file=sys.stderr)
        return 2


def run_main():
    app.run(main)
