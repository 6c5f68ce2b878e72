"""Models of the fit tests that a fresh process imports back (load and export without the
data): an unbuilt subclassed model over int32 token ids, and a two-input functional one."""
import keras
import numpy as np

_RNG = np.random.RandomState(1)
_IDS = _RNG.randint(0, 50, size=(300, 6)).astype(np.int32)
_SIDE = _RNG.normal(size=(300, 4)).astype(np.float32)
_IMAGE = _RNG.normal(size=(300, 8)).astype(np.float32)
_Y_TOKEN = (_IDS[:, 0] % 4).astype(np.int32)
_Y_TWO = (_IMAGE[:, 0] + _SIDE[:, 0] > 0).astype(np.float32)
_Y_REG = _IMAGE[:, :3].sum(1).astype(np.float32)
DATA = {"token": ((_IDS[:240], _Y_TOKEN[:240]), (_IDS[240:], _Y_TOKEN[240:])),
        "two": (((_IMAGE[:240], _SIDE[:240]), _Y_TWO[:240]),
                ((_IMAGE[240:], _SIDE[240:]), _Y_TWO[240:])),
        "two_out": ((_IMAGE[:240], {"cls": _Y_TOKEN[:240], "reg": _Y_REG[:240]}),
                    (_IMAGE[240:], {"cls": _Y_TOKEN[240:], "reg": _Y_REG[240:]}))}


class TokenModel(keras.Model):
    """Layers in __init__, maths in call, never built before training (as users write)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.embed = keras.layers.Embedding(50, 8)
        self.pool = keras.layers.GlobalAveragePooling1D()
        self.out = keras.layers.Dense(4)

    def call(self, ids):
        return self.out(self.pool(self.embed(ids)))


def token_model():
    model = TokenModel()
    model.compile(optimizer="adam", metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def two_inputs():
    image, side = keras.Input((8,), name="image"), keras.Input((4,), name="side")
    hidden = keras.layers.Dense(8, activation="relu")(keras.layers.Concatenate()([image,
                                                                                   side]))
    model = keras.Model([image, side], keras.layers.Dense(1, activation="sigmoid")(hidden))
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


def two_outputs():
    """A classifier and a regressor on one trunk, outputs as a dict, per-output losses,
    weights and metrics."""
    inputs = keras.Input((8,), name="image")
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    model = keras.Model(inputs, {"cls": keras.layers.Dense(4, name="cls")(hidden),
                                 "reg": keras.layers.Dense(1, name="reg")(hidden)})
    model.compile(optimizer="adam",
                  loss={"cls": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                        "reg": "mse"},
                  loss_weights={"cls": 1.0, "reg": 0.5},
                  metrics={"cls": ["accuracy"], "reg": ["mae"]})
    return model
