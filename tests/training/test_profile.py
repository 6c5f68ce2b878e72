"""`trace_dir`: a real TensorFlow profile of one block, and the breakdown read from it."""
import os

import pytest

import mlbench
from mlbench.training import profile

DIGITS = dict(model="simple_cnn", data="digits", global_batch_size=32, precision="float32",
              learning_rate=0.05, model_options={"image_size": 8}, verbose=False)


@pytest.mark.parametrize("name, op_type, expected", [
    ("model/conv1/Conv2D", "_MklNativeFusedConv2D", "matmul/conv"),
    ("gradient_tape/model/conv1/Conv2DBackpropFilter", "_MklNativeConv2DBackpropFilter",
     "matmul/conv"),
    ("bert/layer_0/attention/einsum/Einsum", "Einsum", "matmul/conv"),
    ("model/bn/FusedBatchNormV3", "_MklNativeFusedBatchNormEx", "normalisation"),
    ("encoder/transformer/layer_0/output_layer_norm/moments/mean", "Mean", "normalisation"),
    ("model/attention/softmax/Softmax", "Softmax", "softmax"),
    ("model/dense/Cast", "Cast", "casts"),
    ("SGD/SGD/update_3/update_0/ResourceApplyKerasMomentum", "ResourceApplyKerasMomentum",
     "optimizer update"),
    ("AdamWeightDecay/update_12/mul_1", "Mul", "optimizer update"),
    ("while/IteratorGetNext", "IteratorGetNext", "input"),
    ("model/relu/Relu", "Relu", "elementwise"),
])
def test_ops_fall_in_their_category(name, op_type, expected):
    assert profile.category(name, op_type) == expected


def test_trained_block_is_profiled_and_broken_down(tmp_path, capsys):
    trace_dir = str(tmp_path / "trace")
    mlbench.train(train_steps=6, steps_per_loop=3, trace_dir=trace_dir,
                  **{**DIGITS, "verbose": True})
    assert os.path.isfile(profile.latest_trace(trace_dir))
    found = profile.summarize(trace_dir)
    shares = found.shares()
    assert list(shares) == list(profile.CATEGORIES)
    assert sum(shares.values()) == pytest.approx(1.0)
    # A CNN trained with SGD: convolutions and matmuls, a backward pass and an update ran.
    assert shares["matmul/conv"] > 0.05 and shares["optimizer update"] > 0
    assert 0.3 < found.backward_share < 0.95
    assert found.op_ms > 0
    assert "matmul/conv" in capsys.readouterr().out  # the table is printed after the block


def test_benchmark_result_carries_the_breakdown(tmp_path):
    result = mlbench.benchmark("resnet_tiny", batch_size=8, num_warmup_batches=1,
                               num_batches=2, num_runs=2, precision="float32",
                               trace_dir=str(tmp_path), verbose=False)
    assert result.breakdown.categories["normalisation"] > 0  # ResNet's batch norms
    assert len(os.listdir(tmp_path / "plugins" / "profile")) == 1  # the first run only


def test_a_directory_without_a_profile_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        profile.summarize(str(tmp_path))


def test_idle_time_is_the_wall_time_no_op_covers():
    """Ops over [1, 3], [2.5, 3.5] and [3, 5] in a wall of [0, 10]: busy 4, idle 6; an op
    reaching past the wall counts only inside it."""
    ops = [("a", "x", 1.0, 2.0), ("b", "x", 2.5, 1.0), ("c", "x", 3.0, 2.0)]
    assert profile._idle(ops, (0.0, 10.0)) == pytest.approx(6.0)
    assert profile._idle(ops + [("d", "x", 9.0, 5.0)], (0.0, 10.0)) == pytest.approx(5.0)
