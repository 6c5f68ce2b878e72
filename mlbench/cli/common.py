"""What every subcommand's flags share: exit codes, the tf_cnn_benchmarks alias table, and
flags made from a function's signature (booleans both ways, 'auto', dicts, lists)."""
import argparse
import collections.abc
import inspect
import typing

from mlbench.cli.values import boolean_or_auto, literal, mapping, names

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TARGET = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT; SIGTERM gives 143
EXIT_CODES = ("exit codes: 0 ok, 1 failed (including a diverged run), 2 bad usage or bad "
              "input, 3 target not reached, 130/143 interrupted by SIGINT/SIGTERM "
              "(checkpoint saved: the same command resumes)")
SIMPLE_EXIT_CODES = "exit codes: 0 ok, 1 failed, 2 bad usage or bad input"


# The one alias table: tf_cnn_benchmarks' flag name of an API argument. Both names work
# in `train` and `benchmark` (`--num_gpus=2` and `--num_devices=2`); errors name the
# flag the user typed.
ALIASES = {"num_devices": "num_gpus", "all_reduce": "all_reduce_spec",
           "jit_compile": "xla_compile"}
LITERAL_ARGUMENTS = ("data", "strategy")  # a name, or a Python literal (a dict of options)


def parser_for(parameter):
    """(argparse type, metavar) of a parameter, from its annotation."""
    kind = parameter.annotation
    if typing.get_origin(kind) is typing.Union:
        members = [a for a in typing.get_args(kind) if a is not type(None)]
        if set(members) == {bool, str}:
            return boolean_or_auto, "true|false|auto"
        kind = members[0] if len(members) == 1 else typing.Any
    origin = typing.get_origin(kind) or kind
    if origin in (dict, collections.abc.Mapping):
        return mapping, "K=V,.."
    if origin in (list, tuple, collections.abc.Sequence):
        return names, "A,B,.."
    if kind in (int, float):
        return kind, "N" if kind is int else "X"
    return literal if parameter.name in LITERAL_ARGUMENTS else str, None


def add_boolean(parser, name, help_text, dest=None, alias=None):
    """`--name` / `--noname`, as absl and tf_cnn_benchmarks spell booleans."""
    dest, names_ = dest or name, [name] + ([alias] if alias else [])
    parser.add_argument(*[f"--{n}" for n in names_], dest=dest, action="store_const",
                        const=True, help=help_text)
    parser.add_argument(*[f"--no{n}" for n in names_], dest=dest, action="store_const",
                        const=False, help=argparse.SUPPRESS)


def add_boolean_or_auto(parser, name, help_text, dest, alias=None):
    """`--name` (true), `--name=true|false|auto` and `--noname`: both spellings, as absl
    and tf_cnn_benchmarks wrote booleans (`--xla_compile`, `--xla_compile=true`)."""
    names_ = [name] + ([alias] if alias else [])
    parser.add_argument(*[f"--{n}" for n in names_], dest=dest, nargs="?", const=True,
                        type=boolean_or_auto, metavar="true|false|auto", help=help_text)
    parser.add_argument(*[f"--no{n}" for n in names_], dest=dest, action="store_const",
                        const=False, help=argparse.SUPPRESS)


def signature_flags(parser, function, help_texts, skip=()):
    """One flag per argument of `function`: its type from the annotation, its help from
    `help_texts` (written for the command line; every flag has one), its default shown;
    an argument in ALIASES also answers to tf_cnn_benchmarks' name."""
    for name, parameter in inspect.signature(function).parameters.items():
        if name in skip:
            continue
        if name not in help_texts:
            raise KeyError(f"flag --{name} of {function.__name__} has no help text")
        text, alias = help_texts[name], ALIASES.get(name)
        kind, metavar = parser_for(parameter)
        if parameter.annotation is bool:
            add_boolean(parser, name, f"{text} (--no{name} to turn off)", name, alias)
        elif kind is boolean_or_auto:
            add_boolean_or_auto(parser, name, f"{text} (default {parameter.default!r})", name,
                                alias)
        else:
            default = ("" if parameter.default in (None, inspect.Parameter.empty)
                       else f" (default {parameter.default!r})")
            flags = [f"--{name}"] + ([f"--{alias}"] if alias else [])
            parser.add_argument(*flags, dest=name, type=kind, metavar=metavar,
                                help=text + default)


def print_dry_run(lines, what=""):
    """What `--dry_run` prints: that nothing ran, then what would have."""
    print("\n".join([f"dry run{what}: nothing ran, nothing was written", *lines]))
    return EXIT_OK


def given_arguments(args, function):
    """The flags given on the command line, as `function`'s keyword arguments (the
    others keep the signature's defaults: no default is written twice)."""
    return {name: getattr(args, name) for name in inspect.signature(function).parameters
            if getattr(args, name, None) is not None}


def import_flags(parser):
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE",
                        help="import your own module first (models/data it registers, "
                             "functions a gin file names as @module.function); repeatable.")


def gin_flags(parser, required=False):
    parser.add_argument("--gin_file", action="append", default=[], required=required,
                        help="gin file (searched as given, then among mlbench's shipped "
                             "gin files); repeatable.")
    parser.add_argument("--gin_bindings", action="append", default=[],
                        help="gin binding, e.g. \"train.train_steps=100\"; repeatable.")


def host_flags(parser):
    """tf_cnn_benchmarks' cluster flags: build TF_CONFIG for this process."""
    parser.add_argument("--worker_hosts", help="host:port,... of every worker.")
    parser.add_argument("--ps_hosts", help="host:port,... of every parameter server.")
    parser.add_argument("--controller_host",
                        help="host:port of the chief (with --ps_hosts: the coordinator).")
    parser.add_argument("--task_index", type=int, default=0, help="this task's index.")
    parser.add_argument("--job_name", default="worker", help="worker | ps | chief.")
