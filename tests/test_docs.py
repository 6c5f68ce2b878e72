"""Every `mlbench` command in README.md and docs/ is run here, not only parsed.

A command that takes seconds runs as written. A training, benchmark or MLPerf
command runs with `--dry_run` appended: names, gin files, suites, data folders,
device counts, batch splits and the closed rules are all checked and the plan is
printed, but no step runs (the test suite cannot train ResNet-50 to 75.9 %). A
command that needs what this machine lacks (ImageNet under /data, 8 GPUs, a Slurm
allocation) must fail with exit code 2 and an error naming exactly that.
Placeholders a reader fills in (`--gin_file=...`, `my_project.models`) are listed in
TEMPLATES and skipped; a command found in the docs and known nowhere here fails.
"""
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess

import pytest

from conftest import REPO

DOCS = ["README.md"] + sorted(os.path.join("docs", f) for f in
                              os.listdir(os.path.join(REPO, "docs")) if f.endswith(".md"))
SUBCOMMANDS = ("train", "evaluate", "export", "benchmark", "mlperf", "project", "report",
               "compare", "data", "list", "launch")
COMMAND = re.compile(r"^(?P<env>(?:[A-Z_]+=\S+ )*)(?P<srun>srun .*?)?(?:\.venv/bin/)?mlbench "
                     rf"(?P<rest>(?:{'|'.join(SUBCOMMANDS)})(?: .*)?)$")
DRY = ("train", "benchmark", "mlperf")
# (what the command asks for, the exit code, what the error must name)
LACKING = [("/data/imagenet", 2, "`data_dir` ('/data/imagenet')"),
           ("/data/bert", 2, "/data/bert"),
           ("--cluster=slurm", 2, "slurm")]
TEMPLATES = ("--gin_file=...", "my_project.models", "tests/distributed/worker_script.py")
# covered where it is set up for real: the SIGSTOP stall of a worker (minutes of training)
COVERED_ELSEWHERE = {"tests/distributed/worker_script.py":
                     "tests/distributed/test_distributed.py"}


def documented_commands():
    """(doc, command) for every mlbench command line in the docs' fenced code blocks
    (continuation lines joined, comments and `&` dropped; output lines skipped)."""
    found = []
    for doc in DOCS:
        text = open(os.path.join(REPO, doc)).read()
        for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = " ".join(line.split("#", 1)[0].split()).rstrip("&").strip()
                match = COMMAND.match(line)
                if match:  # output lines ("mlbench train: failed: ...") do not match
                    found.append((doc, line))
    return found


def _argv(command):
    rest = COMMAND.match(command).group("rest")
    rest = re.sub(r" \[[^\]]*\]", "", rest)  # optional parts shown in brackets
    return shlex.split(rest.split(" > ")[0])


def _expectation(command):
    for needle, code, named in LACKING:
        if needle in command:
            return code, named
    return 0, None


def _run(argv, cwd):
    """`mlbench <argv>` in this process (TensorFlow is loaded once for all of them)."""
    from mlbench import cli
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as e:  # argparse's own errors
                code = e.code
    finally:
        os.chdir(here)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A checkout-like folder (gin/ beside runs/) holding the runs the docs' report,
    compare, evaluate and export commands read, made small."""
    root = tmp_path_factory.mktemp("docs")
    os.symlink(os.path.join(REPO, "gin"), root / "gin")
    os.symlink(os.path.join(REPO, "tests"), root / "tests")
    tiny_benchmark = ["--model=resnet_tiny", "--batch_size=8", "--num_warmup_batches=1",
                      "--num_batches=3", "--num_runs=2", "--precision=float32"]
    for argv in (["benchmark", *tiny_benchmark, "--output_dir=runs/monday"],
                 ["benchmark", *tiny_benchmark, "--output_dir=runs/tuesday"],
                 ["train", "--gin_file=gin/cpu/mnist_cnn.gin", "--model_dir=runs/mnist_cnn",
                  "--train_epochs=1", "--precision=float32"],
                 ["benchmark", "--suite=cpu_tiny", "--output_dir=runs/cpu_suite",
                  "--gin_bindings=benchmark_suite.num_batches=2",
                  "--gin_bindings=benchmark_suite.num_runs=1",
                  "--gin_bindings=benchmark_suite.num_warmup_batches=1"],
                 ["mlperf", "--gin_file=mlperf/cpu/resnet_digits.gin", "--runs=1",
                  "--gin_bindings=train.train_epochs=1", "--output_dir=runs/mlperf_cpu"]):
        code, _, err = _run(argv, root)
        assert code in (0, 3), (argv, err[-2000:])
    return root


def test_every_documented_command_runs(sandbox):
    commands = documented_commands()
    assert len(commands) > 40  # the extraction itself works
    failures = []
    for doc, command in commands:
        if any(t in command for t in TEMPLATES):
            continue
        argv = _argv(command)
        if argv[0] in DRY and "--dry_run" not in argv and "--check_package" not in " ".join(argv):
            argv.append("--dry_run")
        if "--watch" in argv:  # a sidecar waits for a training job: not longer than this
            argv.append("--timeout=5")
        if argv[0] == "launch" and "--emit=tfjob" not in argv:
            argv = argv + ["--dry_run"]  # the workers check their plan and stop
        expected, named = _expectation(command)
        output_dirs = [a.split("=", 1)[1] for a in argv if a.startswith(("--output_dir=",
                                                                          "--export_dir="))]
        for folder in output_dirs:  # a doc command writes into a new folder
            if argv[0] not in DRY:
                shutil.rmtree(os.path.join(sandbox, folder), ignore_errors=True)
        code, out, err = _run(argv, sandbox)
        print(f"exit {code}: mlbench {' '.join(argv)}", flush=True)
        ok = code == expected and (named is None or named in err)
        if argv[0] == "compare" and code == 1 and "slower" in out:
            ok = True  # a regression verdict on two tiny noisy runs is a correct answer
        if not ok:
            failures.append(f"{doc}: {command}\n  ran {argv}: exit {code} (expected "
                            f"{expected}{', naming ' + named if named else ''})\n  "
                            f"{(err or out)[-600:]}")
    assert not failures, "\n".join(failures)


def test_commands_covered_elsewhere_are_tested_there():
    for needle, test_file in COVERED_ELSEWHERE.items():
        assert needle.split("=")[-1].split("/")[-1].replace(".py", "") in open(
            os.path.join(REPO, test_file)).read(), (needle, test_file)


def test_no_doc_or_comment_cites_a_file_outside_the_repository():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    outside = re.compile(r"\.\./shared|DESIGN\.md|style rule \d")
    cited = [path for path in tracked if path.endswith((".py", ".md", ".gin", ".sh", ".toml"))
             and path != "tests/test_docs.py"
             and outside.search(open(os.path.join(REPO, path), errors="replace").read())]
    assert not cited
