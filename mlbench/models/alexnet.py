"""AlexNet as in tf_cnn_benchmarks (`models/alexnet_model.py`).

Written in mlbench because neither tf_keras.applications nor Model Garden has
AlexNet. The tf_cnn_benchmarks variant: 227×227 input, conv 64 (11×11/4 VALID)
→ max-pool 3/2 → conv 192 (5×5) → max-pool → conv 384, 384, 256 (3×3) →
max-pool → dense 4096 → dropout → dense 4096 → dropout → classifier
(61,838,248 parameters with 1,000 classes).
"""
import tf_keras as keras

from mlbench.models.layers_util import check_image_size


@keras.utils.register_keras_serializable(package="mlbench")
class AlexNet(keras.Model):
    """AlexNet; `width` scales every layer so a tiny variant trains in seconds."""

    def __init__(self, num_classes=1000, width=1.0, dense_units=4096, dropout=0.5,
                 image_size=227, **kwargs):
        super().__init__(**kwargs)
        # 11x11/4 VALID then three 3/2 pools need at least 67 pixels.
        check_image_size("alexnet", image_size, 67)
        self._config = dict(num_classes=num_classes, width=width, dense_units=dense_units,
                            dropout=dropout, image_size=image_size)
        f = lambda n: max(1, int(n * width))  # noqa: E731
        conv = keras.layers.Conv2D
        pool = lambda: keras.layers.MaxPooling2D(3, 2, padding="valid")  # noqa: E731
        self.features = [
            conv(f(64), 11, strides=4, padding="valid", activation="relu"), pool(),
            conv(f(192), 5, padding="same", activation="relu"), pool(),
            conv(f(384), 3, padding="same", activation="relu"),
            conv(f(384), 3, padding="same", activation="relu"),
            conv(f(256), 3, padding="same", activation="relu"), pool(),
            keras.layers.Flatten(),
        ]
        self.head = [
            keras.layers.Dense(dense_units, activation="relu"), keras.layers.Dropout(dropout),
            keras.layers.Dense(dense_units, activation="relu"), keras.layers.Dropout(dropout),
            keras.layers.Dense(num_classes),
        ]
        self.to_float32 = keras.layers.Activation("linear", dtype="float32")

    def call(self, images, training=False):
        x = images
        for layer in self.features + self.head:
            x = layer(x, training=training) if isinstance(layer, keras.layers.Dropout) else layer(x)
        return self.to_float32(x)

    def get_config(self):
        return dict(self._config)

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def build(num_classes=1000, image_size=227, **kwargs):
    model = AlexNet(num_classes=num_classes, image_size=image_size, **kwargs)
    model.build((None, image_size, image_size, 3))
    return model
