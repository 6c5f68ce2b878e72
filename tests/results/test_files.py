"""`results.files`: the one writer and reader of result files (kind stamp, schema,
checks on read, records back)."""
import json

import pytest

from mlbench.results import files as result_files
from mlbench.results import records


def test_result_files_have_one_owner_that_stamps_and_reads_them(tmp_path):
    """Each kind is written stamped and read back as that kind; an older file without the
    stamp is recognised by its fields; asking for another kind names what was found."""
    run_set = records.MLPerfResults(records.MLPerfSettings("resnet"), "open", [],
                                    records.Score(None, 0, 5, False, "no runs"))
    path = result_files.write(str(tmp_path), run_set)
    assert path == str(tmp_path / "results.json")
    assert result_files.read(str(tmp_path)) == ("mlperf", str(tmp_path), run_set)  # round trip
    with pytest.raises(ValueError, match="holds a mlperf result, not benchmark"):
        result_files.read(str(tmp_path), "benchmark")
    older = tmp_path / "old"
    older.mkdir()
    written = {"final_metrics": {"top1": 0.5}, "steps": 3, "reached_target": False,
               "time_to_quality_s": None, "examples_per_second": 10.0, "history": [],
               "config": {}, "ran": {}, "model_dir": None}  # no kind, no schema: older
    (older / "result.json").write_text(json.dumps(written))
    kind, folder, stored = result_files.read(str(older))
    assert (kind, folder, stored.steps, stored.final_metrics) == ("train", str(older), 3,
                                                                  {"top1": 0.5})
    del written["history"]  # a field the record needs: named, never filled in
    (older / "result.json").write_text(json.dumps(written))
    with pytest.raises(result_files.MalformedResult, match="'history' is missing"):
        result_files.read(str(older))
    assert result_files.read_if_present("train", str(tmp_path / "none")) is None
    with pytest.raises(TypeError, match="none of the result records"):
        result_files.write(str(tmp_path), {"kind": "mlperf"})


def test_a_newer_schema_and_a_wrong_type_are_refused_by_name(tmp_path):
    run_set = records.MLPerfResults(records.MLPerfSettings("bert"), "open", [],
                                    records.Score(None, 0, 10, False, "no runs"))
    path = result_files.write(str(tmp_path), run_set)
    data = json.loads(open(path).read())
    open(path, "w").write(json.dumps(dict(data, schema=result_files.SCHEMA + 1)))
    with pytest.raises(result_files.MalformedResult,
                       match=f"schema {result_files.SCHEMA + 1}; this mlbench reads"):
        result_files.read(path)
    open(path, "w").write(json.dumps(dict(data, runs={"0": 1})))
    with pytest.raises(result_files.MalformedResult, match="field 'runs' is an object"):
        result_files.read(path)


def test_a_schema_1_train_result_is_read_as_this_schema_names_its_fields(tmp_path):
    """Schema 1 wrote a history record's rate as `lr` and (until 3) the arguments under
    "config": read back as `learning_rate` and `arguments`."""
    written = {"kind": "train", "schema": 1, "model": "mlp", "status": "finished",
               "final_metrics": {"top1": 0.5}, "steps": 10, "reached_target": False,
               "time_to_quality_s": None, "examples_per_second": 10.0,
               "history": [{"step": 10, "loss": 0.7, "lr": 0.05}],
               "config": {"model": "mlp", "target": 0.9}, "ran": {}, "model_dir": None}
    (tmp_path / "result.json").write_text(json.dumps(written))
    _, _, stored = result_files.read(str(tmp_path))
    assert stored.history == [{"step": 10, "loss": 0.7, "learning_rate": 0.05}]
    assert stored.arguments == {"model": "mlp", "target": 0.9}
    rewritten = json.loads(open(result_files.write(str(tmp_path / "new"), stored)).read())
    assert rewritten["schema"] == result_files.SCHEMA == 3
    assert "arguments" in rewritten and "config" not in rewritten
