"""Model factories: `get(name, num_classes=...)`, `list_models()`, `flops(name)`.

Published forward FLOPs (multiply-add = 2) are recorded for the full-size
models so benchmarks report model-FLOPs utilisation without building them;
tests check the graph count against these figures.
"""
import dataclasses
import functools

from mlbench.models import alexnet, bert, vision
from mlbench.models.flops import bert_encoder_flops, count_graph_flops
from mlbench.models.own import is_own
from mlbench.models.registry import (ModelInfo, get, info, input_shape, list_models, register,
                                     unregister)
from mlbench.models.registry import flops as _table_flops

_IMAGE = "image"
_GARDEN = "Model Garden (official.vision)"
_APPS = "tf_keras.applications"


def _register_image(name, factory, size, source, gflops=None, gflops_source="graph"):
    register(ModelInfo(name, factory, (size, size, 3), _IMAGE, source, gflops, gflops_source))


_register_image("resnet50", functools.partial(vision.resnet, model_id=50), 224, _GARDEN,
                8.2, "He et al. 2016 / MLPerf (4.1 GMACs)")
_register_image("resnet152", functools.partial(vision.resnet, model_id=152), 224, _GARDEN,
                23.0, "He et al. 2016 (11.5 GMACs)")
_register_image("resnet50_v1", vision.resnet50_v1, 224, _APPS, 7.7, "He et al. 2016 (3.9 GMACs)")
_register_image("vgg16", vision.vgg16, 224, _APPS, 30.9, "Simonyan & Zisserman 2015 (15.5 GMACs)")
_register_image("inception_v3", vision.inception_v3, 299, _APPS, 11.4,
                "Szegedy et al. 2016 (5.7 GMACs)")
_register_image("alexnet", alexnet.build, 227, "mlbench (tf_cnn_benchmarks variant)", 1.68,
                "graph count of the tf_cnn_benchmarks variant (0.84 GMACs)")
_register_image("alexnet_tiny", functools.partial(alexnet.build, image_size=67, width=0.125,
                                                  dense_units=128), 67, "mlbench")
_register_image("vgg_tiny", vision.vgg_tiny, 32, "mlbench (VGG pattern)")
_register_image("inception_tiny", vision.inception_tiny, 32, "mlbench (InceptionV3 branches)")
_register_image("resnet_tiny", functools.partial(vision.resnet, model_id=18, image_size=32,
                                                 depth_multiplier=0.25), 32, _GARDEN)
register(ModelInfo("simple_cnn", vision.simple_cnn, (28, 28, 1), _IMAGE, "mlbench"))
register(ModelInfo("mlp", vision.mlp, (16,), "vector", "mlbench"))

BERT_SEQ_LEN = 128
for _size, (_layers, _hidden) in bert.BERT_SIZES.items():
    register(ModelInfo(f"bert_{_size}", functools.partial(bert.pretrainer, size=_size),
                       (BERT_SEQ_LEN,), "bert", "Model Garden (official.nlp)",
                       bert_encoder_flops(_layers, _hidden, BERT_SEQ_LEN) / 1e9,
                       f"analytic encoder count at sequence length {BERT_SEQ_LEN}"))


def resolve(model):
    """The ModelInfo of what `train(model=...)` was given: a registered name, a
    zero-argument function returning a Keras model (tf_keras or Keras 3), or a built one."""
    if is_own(model):
        from mlbench.models import own
        return own.describe(model)
    model_info = info(model)
    if not model_info.own:
        return model_info
    # registered by the user: a graph build tells its Keras generation (and its shape)
    from mlbench.models import own
    described = own.describe(lambda: model_info.factory(), name=model_info.name)
    if model_info.input_shape is not None:
        return dataclasses.replace(model_info, keras=described.keras)
    return dataclasses.replace(described, factory=model_info.factory,
                               gflops=model_info.gflops)


def flops_of(model_info, model=None):
    """Forward FLOPs per example of a resolved model: the recorded figure, else counted
    on the graph of `model` (built) or of a fresh build."""
    if model_info.gflops is not None:
        return model_info.gflops * 1e9
    if model_info.kind == "bert":
        raise ValueError(f"No FLOPs figure for {model_info.name!r}.")
    if model_info.input_shape is None:
        raise ValueError(f"No FLOPs figure for {model_info.name!r}: its input shape is unknown.")
    if model is None and not model_info.own:
        return flops(model_info.name)
    return float(count_graph_flops(model if model is not None else model_info.factory(),
                                   model_info.input_shape))


@functools.lru_cache(maxsize=None)
def flops(name):
    """Forward FLOPs per example: the recorded figure, else counted on the graph."""
    model_info = info(name)
    if model_info.gflops is not None:
        return _table_flops(name)
    if model_info.kind == "bert":
        raise ValueError(f"No FLOPs figure for {name!r}.")
    return float(count_graph_flops(get(name), model_info.input_shape))


__all__ = ["get", "list_models", "flops", "flops_of", "info", "resolve", "register",
           "unregister", "input_shape", "count_graph_flops"]


# What one example of a model is, for every throughput line: the page's "images/sec" for
# images, sequences/sec for BERT, examples/sec for vectors and models of several inputs.
UNIT_ABBREVIATION = {"images": "Img", "sequences": "Seq", "examples": "Ex"}


def unit_of(info):
    """'images', 'sequences' or 'examples' for a model's ModelInfo."""
    return {"image": "images", "bert": "sequences"}.get(info.kind, "examples")
