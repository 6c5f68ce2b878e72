"""Per-model defaults from the TensorFlow benchmarks page (DGX-1 P100 table).

Per-device batch 64 (AlexNet 512), SGD; InceptionV3 / ResNet-50 / ResNet-152
used parameter_server with the parameters on the CPU, AlexNet and VGG16
replicated with NCCL.
"""
BATCH_SIZE = {"alexnet": 512}
DEFAULT_BATCH_SIZE = 64
VARIABLE_UPDATE = {
    "inception_v3": ("parameter_server", "cpu"),
    "resnet50": ("parameter_server", "cpu"),
    "resnet152": ("parameter_server", "cpu"),
    "alexnet": ("replicated", "gpu"),
    "vgg16": ("replicated", "gpu"),
}


def batch_size(model):
    return BATCH_SIZE.get(model, DEFAULT_BATCH_SIZE)


def variable_update(model):
    """(variable_update, local_parameter_device) of `model` on the DGX-1 page."""
    return VARIABLE_UPDATE.get(model, ("replicated", "gpu"))
