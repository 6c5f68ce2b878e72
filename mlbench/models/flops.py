"""Forward FLOPs per example, counted on the model's graph.

TF's own profiler (`tf.compat.v1.profiler`, float_ops) counts the forward
graph at batch 1; multiply-add = 2 FLOPs, the convention of the published
figures (ResNet-50 v1.5 ≈ 8.2 GFLOPs = 4.1 GMACs).
"""
import contextlib
import logging

import tensorflow as tf


def count_graph_flops(model, input_shape):
    """FLOPs of one forward pass of `model` on one example of `input_shape`."""
    spec = tf.TensorSpec((1,) + tuple(input_shape), tf.float32)
    concrete = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    graph = concrete.graph
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    # The v1 profiler logs a deprecation warning about its own internals on every call.
    with _tf_log_level(logging.ERROR):
        profile = tf.compat.v1.profiler.profile(graph=graph, options=options)
    return profile.total_float_ops


@contextlib.contextmanager
def _tf_log_level(level):
    logger = tf.get_logger()
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def bert_encoder_flops(num_layers, hidden_size, seq_len):
    """Analytic encoder FLOPs per sequence: 2·S·L·(12H² + 2SH).

    12H² MACs per token per layer are the Q/K/V/output projections (4H²) and
    the feed-forward (8H²); 2SH are the attention scores and the weighted sum.
    """
    return 2 * seq_len * num_layers * (12 * hidden_size ** 2 + 2 * seq_len * hidden_size)
