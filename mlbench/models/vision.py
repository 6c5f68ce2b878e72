"""Image classifiers from the field's own libraries.

ResNet v1.5 comes from Model Garden (`official.vision.modeling.backbones.ResNet`,
the MLPerf model: stride 2 in the 3×3 conv of each down-sampling bottleneck);
VGG16, InceptionV3 and ResNet-50 v1 from `tf_keras.applications` (weights=None).
"""
import tf_keras as keras
from official.vision.modeling.backbones import resnet as garden_resnet

from mlbench.models.layers_util import check_image_size, float32_logits


def resnet(num_classes=1000, model_id=50, image_size=224, depth_multiplier=1.0,
           norm_momentum=0.9, norm_epsilon=1e-5):
    """ResNet v1.5 backbone (Model Garden) + global average pool + dense classifier.

    BN momentum 0.9 / epsilon 1e-5 follow the MLPerf reference.
    """
    if model_id not in garden_resnet.RESNET_SPECS:
        raise ValueError(f"`model_id` ({model_id!r}) must be one of "
                         f"{sorted(garden_resnet.RESNET_SPECS)}.")
    check_image_size(f"resnet{model_id}", image_size, 32)
    inputs = keras.Input((image_size, image_size, 3), name="images")
    backbone = garden_resnet.ResNet(
        model_id=model_id, depth_multiplier=depth_multiplier,
        input_specs=keras.layers.InputSpec(shape=[None, image_size, image_size, 3]),
        norm_momentum=norm_momentum, norm_epsilon=norm_epsilon)
    endpoints = backbone(inputs)
    features = endpoints[max(endpoints, key=int)]
    x = keras.layers.GlobalAveragePooling2D()(features)
    x = keras.layers.Dense(num_classes, name="classifier")(x)
    return keras.Model(inputs, float32_logits(x), name=f"resnet{model_id}_v1_5")


def application(constructor, minimum_size, bias_free=False):
    """Wraps a tf_keras.applications constructor as an mlbench factory; `bias_free`
    drops the convolution biases a batch norm cancels (`without_biases_before_batch_norm`)."""
    def build(num_classes=1000, image_size=None):
        size = image_size or minimum_size["default"]
        check_image_size(constructor.__name__, size, minimum_size["min"])
        base = constructor(weights=None, include_top=True, classes=num_classes,
                           input_shape=(size, size, 3), classifier_activation=None)
        if bias_free:
            base = without_biases_before_batch_norm(base)
        return keras.Model(base.inputs, float32_logits(base.outputs[0]), name=base.name)
    return build


def without_biases_before_batch_norm(model):
    """A copy of functional `model` whose convolutions feeding a batch norm have no bias.

    Batch norm subtracts the batch mean, so such a bias never changes the output and
    its gradient is zero; it still costs a bias add forward and a bias gradient in
    every backward convolution (`Conv2DBackpropFilterWithBias`). tf.keras.applications'
    ResNet50 keeps them; the original ResNet, tf_cnn_benchmarks and Model Garden do
    not. Measured (`benchmarks/candidates.py resnet`): ResNet-50 v1 training ×1.28 float32,
    ×1.05 bf16 on a 2-core AVX-512 CPU (docs/benchmarks.md).
    """
    config = model.get_config()
    classes = {layer["name"]: layer["class_name"] for layer in config["layers"]}
    feeding_bn = {_inbound_layer(layer) for layer in config["layers"]
                  if layer["class_name"] == "BatchNormalization"}
    for layer in config["layers"]:
        if layer["name"] in feeding_bn and classes[layer["name"]] == "Conv2D":
            layer["config"]["use_bias"] = False
    return keras.Model.from_config(config)


def _inbound_layer(layer_config):
    """The name of the one layer feeding a single-input layer in a functional config."""
    (node,) = layer_config["inbound_nodes"]
    return node[0][0]


vgg16 = application(keras.applications.VGG16, {"default": 224, "min": 32})
inception_v3 = application(keras.applications.InceptionV3, {"default": 299, "min": 75})
resnet50_v1 = application(keras.applications.ResNet50, {"default": 224, "min": 32},
                          bias_free=True)


def vgg_tiny(num_classes=10, image_size=32, filters=(16, 32), convs_per_block=2, dense_units=64):
    """A VGG-style net (3×3 conv blocks + max-pool, two dense layers) small enough for a CPU test."""
    check_image_size("vgg_tiny", image_size, 2 ** len(filters))
    inputs = keras.Input((image_size, image_size, 3), name="images")
    x = inputs
    for n in filters:
        for _ in range(convs_per_block):
            x = keras.layers.Conv2D(n, 3, padding="same", activation="relu")(x)
        x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(dense_units, activation="relu")(x)
    x = keras.layers.Dense(num_classes)(x)
    return keras.Model(inputs, float32_logits(x), name="vgg_tiny")


def _inception_block(x, width):
    """Four InceptionV3-style branches: 1×1, 1×1→3×3, 1×1→3×3→3×3, pool→1×1."""
    def conv_bn(y, n, k):
        y = keras.layers.Conv2D(n, k, padding="same", use_bias=False)(y)
        # momentum 0.9 (as the other small models): short CPU runs need eval statistics
        # that keep up with the weights (0.99 left a 200-step run predicting one class)
        return keras.layers.ReLU()(keras.layers.BatchNormalization(scale=False,
                                                                   momentum=0.9)(y))
    b1 = conv_bn(x, width, 1)
    b3 = conv_bn(conv_bn(x, width, 1), width, 3)
    b5 = conv_bn(conv_bn(conv_bn(x, width, 1), width, 3), width, 3)
    bp = conv_bn(keras.layers.AveragePooling2D(3, 1, padding="same")(x), width, 1)
    return keras.layers.Concatenate()([b1, b3, b5, bp])


def inception_tiny(num_classes=10, image_size=32, widths=(8, 16)):
    """A two-block Inception-style net with the InceptionV3 branch pattern."""
    check_image_size("inception_tiny", image_size, 2 ** len(widths))
    inputs = keras.Input((image_size, image_size, 3), name="images")
    x = keras.layers.Conv2D(widths[0], 3, padding="same", activation="relu")(inputs)
    for width in widths:
        x = keras.layers.MaxPooling2D(2)(_inception_block(x, width))
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(num_classes)(x)
    return keras.Model(inputs, float32_logits(x), name="inception_tiny")


def simple_cnn(num_classes=10, image_size=28, channels=1, filters=(32, 64), dense_units=128,
               batch_norm=True):
    """The small CNN of the CPU time-to-quality runs (MNIST-sized digits)."""
    check_image_size("simple_cnn", image_size, 2 ** len(filters))
    inputs = keras.Input((image_size, image_size, channels), name="images")
    x = inputs
    for n in filters:
        x = keras.layers.Conv2D(n, 3, padding="same", use_bias=not batch_norm)(x)
        if batch_norm:
            x = keras.layers.BatchNormalization(momentum=0.9)(x)
        x = keras.layers.MaxPooling2D(2)(keras.layers.ReLU()(x))
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(dense_units, activation="relu")(x)
    x = keras.layers.Dense(num_classes)(x)
    return keras.Model(inputs, float32_logits(x), name="simple_cnn")


def mlp(num_classes=10, input_dim=16, hidden=(32,)):
    """A plain MLP (no BN, no dropout): the model on which accumulation is exact."""
    inputs = keras.Input((input_dim,), name="features")
    x = inputs
    for n in hidden:
        x = keras.layers.Dense(n, activation="tanh")(x)
    x = keras.layers.Dense(num_classes)(x)
    return keras.Model(inputs, float32_logits(x), name="mlp")
