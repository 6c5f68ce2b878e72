"""`mlbench list`: the names flags take, so no one learns them from an error message."""
import glob
import os

from mlbench.cli.common import EXIT_OK
from mlbench.projector import platforms  # plain records: no TensorFlow


LISTS = ("models", "data", "suites", "platforms", "configs")


def list_flags(parser):
    parser.add_argument("what", choices=LISTS, help="what to list: " + ", ".join(LISTS) + ".")


def run_list(args):
    """Names a flag takes, one per line (so no one learns them from an error message)."""
    if args.what == "platforms":
        for name in sorted(platforms.RECORDS):
            print(f"{name}\t{platforms.RECORDS[name]['name']}")
        return EXIT_OK
    if args.what in ("suites", "configs"):
        from mlbench.config import shipped_gin_root
        root = shipped_gin_root()
        pattern = "benchmarks/*.gin" if args.what == "suites" else "**/*.gin"
        for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            relative = os.path.relpath(path, root)
            print(os.path.basename(path)[:-4] if args.what == "suites" else relative)
        return EXIT_OK
    import mlbench
    print("\n".join(mlbench.models.list_models() if args.what == "models"
                    else mlbench.data.names()))
    return EXIT_OK
