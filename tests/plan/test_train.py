"""The run plan: one resolve → build → loop path, checks before work, no import cycles."""
import ast
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import mlbench
from mlbench import plan as plan_lib
from mlbench.models import precision as precision_lib
from mlbench.plan.arguments import TrainArguments, train_defaults
from mlbench.distribute import strategies
from conftest import REPO, host_op_model

PACKAGE = os.path.join(REPO, "mlbench")
ENTRY_POINTS = {"mlbench", "mlbench.trainer.api", "mlbench.trainer.fit", "mlbench.cli", "mlbench.__main__", "mlbench.distribute.launch",
                "mlbench.mlperf.run", "mlbench.bench.bench", "mlbench.bench.suite"}


def module_imports():
    """{module: set of mlbench modules it imports (anywhere in the file)}."""
    graph = {}
    for root, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            module = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
            module = module[:-len(".__init__")] if module.endswith(".__init__") else module
            graph[module] = _imports(ast.parse(open(path).read()), module)
    return graph


def _imports(tree, module):
    """Modules named by import statements: `from pkg import mod` counts as `pkg.mod` when
    `mod` is a module (a package's own __init__ runs for any submodule, and is not counted)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("mlbench")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mlbench"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                is_module = os.path.exists(os.path.join(REPO, *sub.split("."))) or \
                    os.path.exists(os.path.join(REPO, *sub.split(".")) + ".py")
                found.add(sub if is_module else node.module)
    return found


def _entry_point(module):
    return module in ENTRY_POINTS or module.startswith("mlbench.cli.")


def test_no_library_module_imports_an_entry_point():
    graph = module_imports()
    offenders = {m: sorted(d for d in deps if _entry_point(d)) for m, deps in graph.items()
                 if not _entry_point(m) and any(_entry_point(d) for d in deps)}
    assert not offenders


def test_the_structure_rules_hold_in_the_import_graph():
    """mlperf/ imports no api; the loop reaches no optimizer; reporting reads files and
    imports no producer of them (benchmark mode, training, MLPerf runs)."""
    graph = module_imports()
    assert not [m for m in graph if m.startswith("mlbench.mlperf") and "mlbench.trainer.api" in graph[m]]
    assert "mlbench.training.optimizers" not in graph["mlbench.training.loop"]
    assert "mlbench.training.optimizers" not in graph["mlbench.training.warmup"]
    producers = ("mlbench.bench", "mlbench.training", "mlbench.mlperf.run", "mlbench.trainer.runner")
    assert not {m: d for m, deps in graph.items() if m.startswith("mlbench.reporting")
                for d in deps if d.startswith(producers)}


def _package(module):
    """The node of the package graph: a subpackage of mlbench, or a top-level module."""
    return ".".join(module.split(".")[:2])


def test_the_top_level_holds_at_most_ten_modules():
    """Entry points' own modules live in their packages (trainer/, plan/, results/...)."""
    top = sorted(f for f in os.listdir(PACKAGE) if f.endswith(".py"))
    assert len(top) <= 10, top


def test_per_benchmark_facts_are_read_from_the_benchmark_records():
    """No module outside mlperf/benchmarks.py keys a fact by an MLPerf benchmark's name:
    no `== "bert"`, no {"resnet": ...}, no [...]["resnet"] (docstrings may name them)."""
    names = {"resnet", "bert"}

    def keyed(node):
        if isinstance(node, ast.Compare):
            return any(isinstance(c, ast.Constant) and c.value in names
                       for c in [node.left, *node.comparators])
        if isinstance(node, ast.Dict):
            return any(isinstance(k, ast.Constant) and k.value in names for k in node.keys)
        return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
            node.slice.value in names
    # (plan/ and models/ compare model input kinds, where "bert" is a kind, not a benchmark)
    for folder in ("projector", "mlperf", "cli", "reporting", "bench", "trainer"):
        for name in os.listdir(os.path.join(PACKAGE, folder)):
            path = os.path.join(PACKAGE, folder, name)
            if name.endswith(".py") and path != os.path.join(PACKAGE, "mlperf", "benchmarks.py"):
                tree = ast.parse(open(path).read())
                assert not [n.lineno for n in ast.walk(tree) if keyed(n)], path


def test_package_graph_has_no_cycle():
    """Every arrow between packages points one way (imports inside functions count)."""
    graph = module_imports()
    edges = {}
    for module, deps in graph.items():
        if module == "mlbench":  # the public surface imports entry points; nothing imports it
            continue
        for dep in deps:
            if dep in graph and _package(dep) != _package(module):
                edges.setdefault(_package(module), {}).setdefault(_package(dep), (module, dep))
    _assert_acyclic({p: set(d) for p, d in edges.items()},
                    lambda a, b: "%s imports %s" % edges[a][b])


def _assert_acyclic(edges, why):
    state = {}

    def visit(node, path):
        if state.get(node) == "done":
            return
        if state.get(node) == "active":
            cycle = path[path.index(node):] + [node]
            raise AssertionError("import cycle: " + "; ".join(
                why(a, b) for a, b in zip(cycle, cycle[1:])))
        state[node] = "active"
        for dep in sorted(edges.get(node, ())):
            visit(dep, path + [node])
        state[node] = "done"
    for node in sorted(edges):
        visit(node, [])


def test_train_signature_is_the_typed_arguments_record():
    """`mlbench.train`'s explicit signature and TrainArguments: same names, defaults, order."""
    import dataclasses
    import inspect
    declared = [(n, p.default) for n, p in inspect.signature(mlbench.train).parameters.items()
                if n not in ("gin_files", "gin_bindings")]
    assert declared == [(f.name, f.default) for f in dataclasses.fields(TrainArguments)]


def test_benchmark_signature_is_the_typed_arguments_record():
    import dataclasses
    import inspect
    from mlbench.plan.arguments import BenchmarkArguments
    declared = [(n, p.default) for n, p in inspect.signature(mlbench.benchmark).parameters.items()
                if n not in ("clock", "display_every")]
    assert declared[1:] == [(f.name, f.default) for f in dataclasses.fields(BenchmarkArguments)][1:]
    assert declared[0][0] == "model"  # required in the call, None in the record


def test_plan_reads_arguments_as_a_typed_record():
    """No `a["..."]` lookups in plan/ and the benchmark resolver, and no dict made back
    from the record: the plan keeps the record itself."""
    import re
    for path in ("plan/train.py", "plan/checks.py", "bench/resolve.py"):
        assert not re.findall(r'\ba\[["\']', open(os.path.join(PACKAGE, path)).read()), path
    arguments = plan_lib.train_arguments({"model": "resnet_tiny", "data": "synthetic",
                                          "global_batch_size": 8, "train_steps": 2},
                                         train_defaults())
    assert isinstance(arguments, TrainArguments) and arguments.train_steps == 2
    assert plan_lib.resolve(arguments).arguments is arguments
    with pytest.raises(TypeError, match="trian_steps"):
        TrainArguments(**{**train_defaults(), "trian_steps": 2})
    with pytest.raises(TypeError, match="takes a TrainArguments record, not dict"):
        plan_lib.resolve(train_defaults())  # typed to the end: no dict is taken


def test_import_graph_has_no_cycle():
    graph = module_imports()
    edges = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}
    edges.pop("mlbench")  # the public surface imports entry points; nothing imports it back
    _assert_acyclic(edges, lambda a, b: f"{a} imports {b}")


def test_synthetic_data_trains_without_evals():
    result = mlbench.train(model="resnet_tiny", data="synthetic", global_batch_size=16,
                           train_steps=3, verbose=False)
    assert result.steps == 3 and result.final_metrics == {}
    assert not any("metrics" in h for h in result.history)


def test_target_with_synthetic_data_is_refused_before_training(tmp_path):
    with pytest.raises(ValueError, match="`target` .* needs an eval set"):
        mlbench.train(model="resnet_tiny", data="synthetic", global_batch_size=16,
                      train_steps=3, target={"top1": 0.5}, model_dir=str(tmp_path / "r"))
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("environ,expected", [
    ({}, "local"),
    ({"TF_CONFIG": '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}'},
     "local"),
    ({"TF_CONFIG": '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", '
                   '"index": 1}}'}, "multi_worker_mirrored"),
    ({"TF_CONFIG": '{"cluster": {"chief": ["c:0"], "worker": ["a:1"], "ps": ["p:3"]}, '
                   '"task": {"type": "chief", "index": 0}}'}, "parameter_server"),
])
def test_auto_strategy_honours_tf_config(environ, expected):
    assert strategies.auto_name(environ) == expected


def test_small_digits_adapt_to_a_32x32_rgb_model():
    """8×8×1 digits feed vgg_tiny (32×32×3): resized and channels repeated, as the page did."""
    result = mlbench.train(model="vgg_tiny", data="digits", global_batch_size=32,
                           train_steps=2, precision="float32", verbose=False)
    assert result.model.input_shape == (None, 32, 32, 3)
    # top-1 over the 359 held-out digits, each counted once: a whole number of them
    correct = result.final_metrics["top1"] * 359
    assert correct == pytest.approx(round(correct), abs=1e-3)


def test_eval_on_two_devices_counts_every_example():
    """359 held-out digits split unevenly over 2 replicas: the top-1 is over all of them."""
    result = mlbench.train(model="simple_cnn", data="digits", strategy="mirrored",
                           num_devices=2, global_batch_size=16, train_steps=3,
                           precision="float32", model_options={"image_size": 8}, verbose=False)
    source = mlbench.data.get("digits")
    images, labels = source.eval
    predicted = np.argmax(result.model.predict(images, batch_size=64, verbose=0), -1)
    assert len(labels) == 359
    assert result.final_metrics["top1"] == pytest.approx(np.mean(predicted == labels))


def test_data_of_another_kind_is_refused_naming_both_shapes():
    with pytest.raises(ValueError, match=r"'digits', image examples of shape \(8, 8, 1\).*"
                                         r"'bert_tiny'"):
        mlbench.train(model="bert_tiny", data="digits", global_batch_size=8, train_steps=1)


def test_more_devices_than_tf_started_with_says_what_to_do():
    with pytest.raises(ValueError, match=r"split_cpu\(3\)"):
        mlbench.train(model="mlp", data="digits", strategy="mirrored", num_devices=3,
                      global_batch_size=6, train_steps=1)


def test_notebook_on_a_cpu_only_machine_gets_logical_devices(tmp_path):
    """A fresh process (TF not started): num_devices=2 splits the CPU."""
    code = ("import mlbench\n"
            "from mlbench.data.bundled import digits\n"
            "r = mlbench.train(model='simple_cnn', data='digits', strategy='mirrored', "
            "num_devices=2, global_batch_size=16, train_steps=2, precision='float32', "
            "model_options={'image_size': 8}, verbose=False)\n"
            "print('RAN', r.ran['strategy'], r.ran['replicas'], r.steps)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True,
                         text=True, timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "RAN MirroredStrategy 2 2" in out.stdout


def test_warmed_up_run_falls_back_from_xla_and_records_it(vectors, monkeypatch):
    """Warm-up enters compiled code through TrainStep.run too (as MLPerf runs do)."""
    host_op_model(monkeypatch)
    result = mlbench.train(model="host_mlp", data=vectors, global_batch_size=32, train_steps=2,
                           jit_compile=True, precision="float32", warmup=True, verbose=False)
    assert result.ran["jit_compile"] is False and result.steps == 2


def test_resolve_builds_nothing_and_writes_nothing(tmp_path):
    before = len(tf.compat.v1.get_default_graph().get_operations())
    plan = plan_lib.resolve(plan_lib.train_arguments(
        dict(model="simple_cnn", data="mnist", global_batch_size=64, train_epochs=2,
             eval_every_epochs=1, model_dir=str(tmp_path / "run")),
        train_defaults()))
    assert plan.cadence.train_steps == 125 and plan.cadence.eval_every == 62  # 62.5 steps per epoch
    assert plan.numerics == plan_lib.Numerics(precision_lib.resolve_precision("auto"), False)
    assert plan.distribution.replicas == 1 and plan.distribution.per_replica_batch == 64
    assert not (tmp_path / "run").exists()
    assert len(tf.compat.v1.get_default_graph().get_operations()) == before


def test_users_own_gin_config_survives_train():
    import gin

    @gin.configurable("notebook_thing")
    def thing(value=1):
        return value
    gin.parse_config("notebook_thing.value = 7")
    mlbench.train(model="simple_cnn", data="digits", global_batch_size=8, train_steps=1,
                  model_options={"image_size": 8}, gin_bindings=["train.precision = 'float32'"],
                  verbose=False)
    assert thing() == 7
    gin.clear_config()
