"""`mlbench infer`: a batch sweep's rows, the result file, and bad input refused before
anything is built or written."""
import os

import pytest
import tensorflow as tf

import mlbench
from harness import mlbench_here
from mlbench.results import files as result_files


@pytest.fixture(scope="module")
def swept():
    return mlbench.infer("resnet_tiny", batch_sizes=[1, 4], precision="float32",
                         num_warmup_batches=2, min_batches=5, min_seconds=0.0,
                         verbose=False)


def test_a_sweep_has_one_row_per_batch_with_consistent_figures(swept):
    assert [r.batch_size for r in swept.rows] == [1, 4]
    for row in swept.rows:
        assert row.batches >= 5 and row.warmup_batches == 2
        assert row.p50_ms <= row.p90_ms <= row.p95_ms <= row.p99_ms <= row.max_ms
        assert row.examples_per_sec == pytest.approx(row.batch_size * row.batches /
                                                     row.wall_s)
    assert swept.precision == "float32" and swept.inputs == "synthetic"


def test_the_result_round_trips_through_its_file(swept, tmp_path):
    path = result_files.write(str(tmp_path), swept)
    assert os.path.basename(path) == "inference.json"
    kind, _, read = result_files.read(str(tmp_path))
    assert kind == "inference" and read.rows == swept.rows


def test_the_command_prints_the_table_and_refuses_bad_input_before_writing(tmp_path):
    out = mlbench_here("infer", "mlp", "--batch_sizes=1", "--min_batches=2",
                       "--min_seconds=0", "--num_warmup_batches=1",
                       f"--output_dir={tmp_path / 'x'}")
    assert out.returncode == 2 and "needs one input of known shape" in out.stderr
    out = mlbench_here("infer", "simple_cnn", "--batch_sizes=1,2", "--min_batches=2",
                       "--min_seconds=0", "--num_warmup_batches=1",
                       f"--output_dir={tmp_path / 'ok'}")
    assert out.returncode == 0, out.stderr
    assert "examples/sec" in out.stdout and "p99" in out.stdout
    assert (tmp_path / "ok" / "inference.json").exists()
    for bad in ("--batch_sizes=0", "--batch_sizes=a"):
        out = mlbench_here("infer", "simple_cnn", bad, f"--output_dir={tmp_path / 'no'}")
        assert out.returncode == 2 and "batch_sizes" in out.stderr
    out = mlbench_here("infer", "no_such_model", f"--output_dir={tmp_path / 'no'}")
    assert out.returncode == 2 and "not a known model" in out.stderr
    assert not (tmp_path / "no").exists()


def test_a_model_dir_and_its_export_are_timed_as_trained_and_as_served(tmp_path):
    run, exported = str(tmp_path / "run"), str(tmp_path / "exported")
    mlbench.train(model="simple_cnn", data="digits", train_steps=4, global_batch_size=16,
                  model_dir=run, verbose=False, precision="float32",
                  model_options={"image_size": 8})
    exported_cli = mlbench_here("export", f"--model_dir={run}",
                                f"--export_dir={tmp_path / 'cli'}")
    assert exported_cli.returncode == 0, exported_cli.stderr
    gap = float(exported_cli.stdout.split("by up to ")[1].split()[0])
    assert 0 <= gap < 1e-4  # float32: the served graph agrees to round-off
    mlbench.export(run, exported)
    sweep = dict(batch_sizes=[1, 4], num_warmup_batches=1, min_batches=3, min_seconds=0.0,
                 verbose=False)
    trained, served = mlbench.infer(run, **sweep), mlbench.infer(exported, **sweep)
    assert trained.model == run and trained.precision == "float32"
    assert served.model == exported and served.precision == "as exported"
    assert [r.batch_size for r in served.rows] == [1, 4]
    # a model_dir is rebuilt in another precision on request; an export runs as exported
    assert mlbench.infer(run, precision="mixed_bfloat16", **sweep).precision == \
        "mixed_bfloat16"
    with pytest.raises(ValueError, match="cannot change an exported model"):
        mlbench.infer(exported, precision="mixed_bfloat16", **sweep)
    with pytest.raises(ValueError, match="neither run.json"):
        mlbench.infer(str(tmp_path), **sweep)


def test_a_mixed_precision_run_exported_in_float32_serves_float32_outputs(tmp_path):
    run = str(tmp_path / "run")
    mlbench.train(model="simple_cnn", data="digits", train_steps=4, global_batch_size=16,
                  model_dir=run, verbose=False, precision="mixed_bfloat16",
                  model_options={"image_size": 8})
    done = mlbench_here("export", f"--model_dir={run}", f"--export_dir={tmp_path / 'f32'}",
                        "--precision=float32")
    assert done.returncode == 0, done.stderr
    assert "(precision float32:" in done.stdout
    gap = float(done.stdout.split("by up to ")[1].split()[0])
    assert 0 <= gap < 1e-5  # float32 served beside float32 in process: round-off only
    served = tf.saved_model.load(str(tmp_path / "f32")).signatures["serving_default"]
    (output,) = served(tf.zeros((1, 8, 8, 1))).values()
    assert output.dtype == tf.float32
