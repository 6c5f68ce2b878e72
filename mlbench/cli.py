"""Command line: `mlbench train|...` — the only module that reads flags."""
import sys

from absl import app, flags

FLAGS = flags.FLAGS
COMMANDS = ("train",)

flags.DEFINE_multi_string("gin_file", [], "Gin files (searched as given, then under gin/).")
flags.DEFINE_multi_string("gin_bindings", [], "Gin bindings, e.g. 'train.train_steps=100'.")
flags.DEFINE_string("model_dir", None, "Run directory (checkpoints, summaries, configs).")


def _train():
    import mlbench
    kwargs = {"model_dir": FLAGS.model_dir} if FLAGS.model_dir else {}
    result = mlbench.train(gin_files=FLAGS.gin_file, gin_bindings=FLAGS.gin_bindings, **kwargs)
    return 0 if result.reached_target or not result.config.get("target") else 3


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        raise app.UsageError(f"usage: mlbench {{{'|'.join(COMMANDS)}}} [flags]; "
                             f"got {argv[1:2] or 'nothing'}.")
    command = argv[1]
    try:
        return {"train": _train}[command]()
    except (ValueError, TypeError) as e:
        print(f"mlbench {command}: error: {e}", file=sys.stderr)
        return 2


def run_main():
    app.run(main)
