"""Faults constructed for real, and what mlbench does about them (docs/faults.md): two
writers on one model_dir, a killed lock holder, a lost or garbled checkpoint state file,
a truncated or checksum-broken newest checkpoint, half-written saves, malformed result
files, a full disk at run.json, an eval offset's checkpoints, and the sidecar's misses."""
import errno
import json
import os
import signal
import subprocess
import sys

import pytest

import mlbench
from harness import DIGITS, mlbench_here
from mlbench.results import files as result_files
from mlbench.training import checkpoints, dirlock
from mlbench.training.cadence import Cadence

HOLD = ("import sys, time\nfrom mlbench.training import dirlock\n"
        "with dirlock.held(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(600)\n")


def run(model_dir, steps, **extra):
    return mlbench.train(**dict(DIGITS, train_steps=steps, model_dir=str(model_dir),
                                **{"checkpoint_every": 5, **extra}))


def holder_process(model_dir):
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(model_dir)],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_second_writer_is_refused_naming_the_holder_and_the_first_run_is_intact(tmp_path):
    run(tmp_path / "run", 10)
    before = sorted(os.listdir(tmp_path / "run" / "checkpoints"))
    holder = holder_process(tmp_path / "run")
    try:
        with pytest.raises(dirlock.RunDirectoryBusy) as error:
            run(tmp_path / "run", 20)
        assert f"pid {holder.pid} on " in str(error.value) and "(started 20" in str(error.value)
        assert sorted(os.listdir(tmp_path / "run" / "checkpoints")) == before
        # the command line: exit 2, the holder named
        out = mlbench_here("train", "--model=simple_cnn", "--data=digits",
                           "--model_options=image_size=8", "--global_batch_size=32",
                           "--train_steps=20", f"--model_dir={tmp_path / 'run'}")
        assert out.returncode == 2 and f"pid {holder.pid}" in out.stderr
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_holders_lock_is_taken_over_with_a_message(tmp_path, caplog):
    (tmp_path / "run").mkdir()
    holder = holder_process(tmp_path / "run")
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert json.loads((tmp_path / "run" / dirlock.FILE).read_text())["pid"] == holder.pid
    with caplog.at_level("WARNING", logger="mlbench"):
        result = run(tmp_path / "run", 5)
    assert result.steps == 5
    assert f"took over the lock of {tmp_path / 'run'} left by pid {holder.pid}" in caplog.text
    assert (tmp_path / "run" / dirlock.FILE).read_text() == ""  # released cleanly


@pytest.mark.parametrize("damage", ["deleted", "garbled"])
def test_a_lost_state_file_resumes_from_the_newest_checkpoint_file(tmp_path, damage, caplog):
    run(tmp_path / "run", 15)
    state = tmp_path / "run" / "checkpoints" / "checkpoint"
    if damage == "deleted":
        state.unlink()
    else:
        state.write_text("model_checkpoint_path: \x00\x01 garbage {{{")
    with caplog.at_level("WARNING", logger="mlbench"):
        resumed = run(tmp_path / "run", 20)
    assert resumed.resumed_from_step == 15  # not a silent restart at step 1
    assert "rewrote it from the checkpoint files (steps [5, 10, 15])" in caplog.text
    assert checkpoints.steps_on_disk(str(tmp_path / "run" / "checkpoints"))[-3:] == [10, 15, 20]


@pytest.mark.parametrize("damage", ["truncated", "checksum"])
def test_a_corrupt_newest_checkpoint_is_set_aside_and_the_previous_restored(
        tmp_path, damage, caplog):
    run(tmp_path / "run", 15)
    folder = tmp_path / "run" / "checkpoints"
    data = next(folder.glob("ckpt-15.data-*"))
    raw = bytearray(data.read_bytes())
    if damage == "truncated":
        data.write_bytes(raw[:len(raw) // 2])
    else:
        for i in range(len(raw) // 2, len(raw) // 2 + 64):
            raw[i] ^= 0xFF
        data.write_bytes(bytes(raw))
    loaded = mlbench.load(str(tmp_path / "run"))  # a reader falls back, moving nothing
    assert loaded.restored_from.endswith("ckpt-10") and data.exists()
    assert mlbench.evaluate(str(tmp_path / "run"), verbose=False).step == 10
    with caplog.at_level("WARNING", logger="mlbench"):
        resumed = run(tmp_path / "run", 20)
    assert resumed.resumed_from_step == 10
    assert f"checkpoint {folder / 'ckpt-15'} cannot be restored" in caplog.text
    assert (folder / checkpoints.SET_ASIDE / data.name).exists()  # kept, not deleted


def test_half_written_saves_are_removed_when_the_next_run_starts(tmp_path):
    run(tmp_path / "run", 5)
    leftover = tmp_path / "run" / "checkpoints" / "ckpt-7_temp"
    leftover.mkdir()
    (leftover / "part-00000").write_bytes(b"\0" * 1000)
    run(tmp_path / "run", 10)
    assert not leftover.exists()


def test_malformed_result_files_are_named_and_compare_exits_1(tmp_path):
    good = tmp_path / "good"
    run(good, 5)
    bad = tmp_path / "bad"
    bad.mkdir()
    data = json.loads((good / "result.json").read_text())
    (bad / "result.json").write_text(json.dumps(dict(data, final_metrics=[1, 2])))
    out = mlbench_here("compare", str(good), str(bad), "--fail_on_regression=5%")
    assert out.returncode == 2
    assert f"{str(bad / 'result.json')!r}" in out.stderr and "'final_metrics' is a list" \
        in out.stderr
    report = mlbench_here("report", str(good), str(bad), f"--output={tmp_path / 'page.html'}")
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "page.html").read_text()
    assert "Malformed result:" in page and "&#x27;final_metrics&#x27; is a list" in page
    (bad / "result.json").write_text(json.dumps(data)[:40])
    out = mlbench_here("compare", str(good), str(bad))
    assert out.returncode == 2 and "is not valid JSON" in out.stderr
    missing = dict(data, examples_per_second=None)
    (bad / "result.json").write_text(json.dumps(missing))
    gate = mlbench_here("compare", str(good), str(bad), "--fail_on_regression=5%")
    assert gate.returncode == 1, gate.stdout  # a figure missing on a side fails the gate
    allowed = mlbench_here("compare", str(good), str(bad), "--fail_on_regression=5%",
                           "--allow_incomparable")
    assert allowed.returncode == 0 and "not comparable" in allowed.stdout


def test_a_full_disk_at_run_json_names_the_folder(tmp_path, monkeypatch):
    from mlbench.plan import rundir

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(rundir, "write_json", full)
    with pytest.raises(checkpoints.DiskFullError) as error:
        run(tmp_path / "run", 5)
    assert str(tmp_path / "run") in str(error.value) and "run.json" in str(error.value)


def test_a_target_no_bounded_metric_can_meet_is_refused_before_model_dir_exists(tmp_path):
    with pytest.raises(ValueError, match=r"\{'top1': 2.0\} can never be met"):
        mlbench.train(**dict(DIGITS, train_steps=5, target={"top1": 2.0},
                             model_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()


def test_every_eval_gets_a_checkpoint_with_an_eval_offset():
    cadence = Cadence(train_steps=40, eval_every=10, eval_offset=5)
    assert [s for s in range(1, 41) if cadence.checkpoint_due(s)] == [5, 15, 25, 35, 40]
    assert [s for s in range(1, 41) if cadence.eval_due(s)] == [5, 15, 25, 35]
    every = Cadence(train_steps=12, eval_every=10, eval_offset=5, checkpoint_every=4)
    assert [s for s in range(1, 13) if every.checkpoint_due(s)] == [4, 8, 12]


def test_explicit_train_steps_replace_a_gin_files_train_epochs():
    from mlbench.trainer.api import plan_train
    plan = plan_train(gin_files=["gin/cpu/mnist_cnn.gin"], train_steps=7)
    assert plan.cadence.train_steps == 7


def test_the_sidecar_names_the_checkpoints_it_never_saw(tmp_path, capsys):
    from mlbench.trainer import evaluation
    run(tmp_path / "run", 12, checkpoint_every=2)
    evaluations = evaluation.watch(str(tmp_path / "run"), timeout=120, poll_s=0.1)
    assert [e.step for e in evaluations] == [8, 10, 12]  # the three kept
    assert "not evaluated: checkpoint step(s) [2, 4, 6]" in capsys.readouterr().out


def test_synthetic_data_takes_the_image_size_model_options_give(tmp_path):
    """`--model_options=image_size=32` with synthetic data: 32×32 images are made (the
    registered model is 28×28), so the run trains instead of failing at its first step
    after run.json was written."""
    result = mlbench.train(model="simple_cnn", data="synthetic", global_batch_size=8,
                           train_steps=2, model_options={"image_size": 32}, verbose=False,
                           model_dir=str(tmp_path / "run"))
    assert result.steps == 2 and tuple(result.model.input_shape[1:3]) == (32, 32)


def test_a_result_file_of_a_newer_schema_is_refused_by_name(tmp_path):
    run(tmp_path / "run", 5)
    data = json.loads((tmp_path / "run" / "result.json").read_text())
    assert data["schema"] == result_files.SCHEMA and data["kind"] == "train"
    (tmp_path / "run" / "result.json").write_text(json.dumps(dict(data, schema=99)))
    out = mlbench_here("compare", str(tmp_path / "run"), str(tmp_path / "run"))
    assert out.returncode == 2 and \
        f"has schema 99; this mlbench reads schema {result_files.SCHEMA}" in out.stderr


def test_a_full_disk_at_export_and_evaluation_names_the_path_and_the_way_back(
        tmp_path, monkeypatch):
    result = run(tmp_path / "run", 5)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(result.model, "save", full)
    with pytest.raises(checkpoints.DiskFullError) as error:
        result.export(str(tmp_path / "export"))
    assert f"exporting to {tmp_path / 'export'}" in str(error.value)
    assert "free space and export again" in str(error.value)
    from mlbench.trainer import evaluation
    monkeypatch.setattr(evaluation, "write_json", full)
    with pytest.raises(checkpoints.DiskFullError) as error:
        mlbench.evaluate(str(tmp_path / "run"), verbose=False)
    assert "evaluations" in str(error.value) and "checkpoints are untouched" in str(error.value)
