"""`results.codec`: records to JSON values and back, driven by the records' type hints."""
import json

import pytest

from mlbench.results import codec, projection, records
from mlbench.training.cadence import Cadence


def benchmark_result():
    run = records.RunStats(100.0, 2.0, 1.5, 98.0, 3, [0.08, 0.08, 0.08])
    cell = projection.ProjectedCell(2, 190.0, 150.0, 200.0, 200.0, 0.1, 0.01, 0.0, 0.0,
                                    measured=200.0)
    projected = projection.Projection("mlp", "dgx1_p100", "replicated", 8, 1, 98.0, 400,
                                      [cell])
    finding = records.Finding("input", "ok", "compute-bound", "fed", {"rate": 1.0})
    return records.BenchmarkResult(
        model="mlp", batch_size=8, num_devices=1, data="synthetic",
        variable_update="replicated", runs=[run],
        images_per_sec=records.Stats(98.0, 0.0, 98.0, 98.0, 1), compile_s=0.5,
        ran={"precision": "float32"}, projection=projected, diagnosis=[finding])


def test_nested_records_survive_a_json_round_trip():
    result = benchmark_result()
    again = codec.decode(records.BenchmarkResult,
                         json.loads(json.dumps(codec.encode(result))))
    assert again == result
    assert isinstance(again.runs[0], records.RunStats)
    assert isinstance(again.projection.cells[0], projection.ProjectedCell)
    # a property, read from the decoded fields: 190 projected against 200 measured
    assert again.projection.cells[0].error == pytest.approx(190.0 / 200.0 - 1)
    assert "error" not in codec.encode(result.projection.cells[0])  # not a stored field


def test_a_missing_or_mistyped_nested_field_is_named_with_its_path():
    data = codec.encode(benchmark_result())
    del data["runs"][0]["jitter"]
    with pytest.raises(codec.DecodeError, match=r"field 'runs\[0\].jitter' is missing"):
        codec.decode(records.BenchmarkResult, data)
    data = codec.encode(benchmark_result())
    data["projection"]["cells"] = {"2": 190.0}
    with pytest.raises(codec.DecodeError, match="field 'projection.cells' holds dict"):
        codec.decode(records.BenchmarkResult, data)


def test_a_field_keyed_otherwise_in_the_file_and_fields_left_out():
    """run.json writes the model's import path under 'import' (no Python name); a
    TrainResult's model and optimizer never reach a file and read back as None."""
    record = records.RunRecord(records.ModelReference("import", import_path="pkg:build"),
                               "float32", ["data"], cadence=Cadence(10, 5))
    data = codec.encode(record)
    assert data["model"]["import"] == "pkg:build" and "import_path" not in data["model"]
    assert codec.decode(records.RunRecord, json.loads(json.dumps(data))) == record
    train = records.TrainResult(model=object(), final_metrics={}, reached_target=False,
                                time_to_quality_s=None, steps=1, examples_per_second=None,
                                history=[], arguments={}, ran={}, model_dir=None,
                                optimizer=object())
    written = codec.encode(train)
    assert "model" not in written and "optimizer" not in written
    assert codec.decode(records.TrainResult, written).model is None
