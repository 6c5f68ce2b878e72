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
import os
import re
import shlex
import shutil
import subprocess

import pytest

from conftest import REPO
from harness import TINY_BENCHMARK, mlbench_here

DOCS = ["README.md"] + sorted(os.path.join("docs", f) for f in
                              os.listdir(os.path.join(REPO, "docs")) if f.endswith(".md"))
SUBCOMMANDS = ("train", "evaluate", "export", "benchmark", "mlperf", "project", "report",
               "compare", "data", "list", "launch")
COMMAND = re.compile(r"^(?P<env>(?:[A-Z_]+=\S+ )*)(?P<srun>srun .*?)?(?:\.venv/bin/)?mlbench "
                     rf"(?P<rest>(?:{'|'.join(SUBCOMMANDS)})(?: .*)?)$")
DRY = ("train", "benchmark", "mlperf")
# (what the command asks for that this machine lacks, the exit code, what the error names)
LACKING = [("/data/imagenet", 2, "`data_dir` ('/data/imagenet')"),
           ("/data/bert", 2, "/data/bert"),
           ("--num_gpus=8", 2, "`num_devices` (--num_gpus) (8)"),
           ("--cluster=slurm", 2, "slurm"),
           # a sidecar beside a training job that this test does not start
           ("--model_dir=runs/big --watch", 1, "no run started in `model_dir` ('runs/big')"),
           # the sandbox's package holds one short run: the checker's refusal is the answer
           ("--check_package=runs/package", 1, "found 1, expected 5")]
TEMPLATES = ("--gin_file=...", "my_project.models", "tests/distribute/worker_script.py")
# covered where it is set up for real: the SIGSTOP stall of a worker (minutes of training)
COVERED_ELSEWHERE = {"tests/distribute/worker_script.py":
                     "tests/distribute/test_launch.py"}


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
    """(exit code, the texts of which the error must name one) of a documented command."""
    lacking = [(code, named) for needle, code, named in LACKING if needle in command]
    if not lacking:
        return 0, ()
    return lacking[0][0], [named for _, named in lacking]


def _checkout_like(tmp_path_factory, name):
    root = tmp_path_factory.mktemp(name)
    os.symlink(os.path.join(REPO, "gin"), root / "gin")
    os.symlink(os.path.join(REPO, "tests"), root / "tests")
    return root


# commands that read what earlier commands wrote (a suite, runs, a result.json, a package)
READERS = ("project --from", "project --calibrate", "report ", "compare ", "evaluate ",
           "export ", "--check_package")


@pytest.fixture(scope="module")
def sandboxes(tmp_path_factory):
    """Two checkout-like folders (gin/ beside runs/): one where the documented commands
    that write start from nothing, one holding the runs the docs' readers read, made
    small here."""
    root = _checkout_like(tmp_path_factory, "docs_readers")
    tiny_benchmark = TINY_BENCHMARK
    for argv in (["benchmark", *tiny_benchmark, "--output_dir=runs/monday"],
                 ["benchmark", *tiny_benchmark, "--output_dir=runs/tuesday"],
                 ["train", "--gin_file=gin/cpu/mnist_cnn.gin", "--model_dir=runs/mnist_cnn",
                  "--train_epochs=1", "--precision=float32"],
                 ["benchmark", "--suite=cpu_tiny", "--output_dir=runs/cpu_suite",
                  "--gin_bindings=benchmark_suite.num_batches=2",
                  "--gin_bindings=benchmark_suite.num_runs=1",
                  "--gin_bindings=benchmark_suite.num_warmup_batches=1"],
                 ["mlperf", "--gin_file=mlperf/cpu/resnet_digits.gin", "--runs=1",
                  "--gin_bindings=train.train_epochs=1", "--output_dir=runs/mlperf_cpu",
                  "--package_dir=runs/package", "--submitter=my_org", "--system=cpu_2core"],
                 # stand-ins for the measurements docs/projection.md makes on a GPU machine
                 ["benchmark", *tiny_benchmark, "--output_dir=runs/r50"],
                 ["benchmark", *tiny_benchmark, "--num_gpus=1", "--output_dir=runs/one"],
                 ["benchmark", *tiny_benchmark, "--num_gpus=2", "--output_dir=runs/two"]):
        ran = mlbench_here(*argv, cwd=root)
        code, err = ran.returncode, ran.stderr
        # 3: the short runs end before their targets; 1: package_checker refuses a package
        # of one run (it wants 5), which is still the folder `--check_package` re-checks
        assert code in ((0, 1, 3) if "--package_dir=runs/package" in argv else (0, 3)), (
            argv, err[-2000:])
    return _checkout_like(tmp_path_factory, "docs_writers"), root


def test_every_documented_command_runs(sandboxes):
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
        sandbox = sandboxes[1] if any(r in command for r in READERS) else sandboxes[0]
        # a path the docs put under /tmp goes under the sandbox
        argv = [a.replace("=/tmp/", f"={sandbox}/tmp/") for a in argv]
        output_dirs = [a.split("=", 1)[1] for a in argv if a.startswith(("--output_dir=",
                                                                          "--export_dir="))]
        for folder in output_dirs:  # a doc command writes into a new folder
            if argv[0] not in DRY:
                shutil.rmtree(os.path.join(sandbox, folder), ignore_errors=True)
        ran = mlbench_here(*argv, cwd=sandbox)
        code, out, err = ran.returncode, ran.stdout, ran.stderr
        print(f"exit {code}: mlbench {' '.join(argv)}", flush=True)
        ok = code == expected and (not named or any(n in err + out for n in named))
        if argv[0] == "compare" and code == 1 and "slower" in out:
            ok = True  # a regression verdict on two tiny noisy runs is a correct answer
        if not ok:
            failures.append(f"{doc}: {command}\n  ran {argv}: exit {code} (expected "
                            f"{expected}{', naming ' + ' or '.join(named) if named else ''})"
                            f"\n  {(err or out)[-600:]}")
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
