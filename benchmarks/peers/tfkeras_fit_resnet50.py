"""Peer reference: what a tf_keras user writes without mlbench.

Keras ResNet50 (v1) trained with plain `model.fit` on in-memory synthetic
ImageNet-shaped data, in the same virtual environment as mlbench.

Run (inside the project's venv):
    python benchmarks/peers/tfkeras_fit_resnet50.py <float32|mixed_bfloat16> 32 10
Prints one line:  PEER tfkeras-fit <policy> bs=<B>: <X> images/sec
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

policy, batch, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
keras.mixed_precision.set_global_policy(policy)
model = keras.applications.ResNet50(weights=None, classes=1000)
model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9),
              loss=keras.losses.SparseCategoricalCrossentropy())
x = tf.random.uniform((batch, 224, 224, 3))
y = tf.random.uniform((batch,), maxval=1000, dtype=tf.int32)
data = tf.data.Dataset.from_tensors((x, y)).repeat()
model.fit(data, steps_per_epoch=3, epochs=1, verbose=0)  # warm-up and tracing
start = time.perf_counter()
model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
elapsed = time.perf_counter() - start
print(f"PEER tfkeras-fit {policy} bs={batch}: {batch * steps / elapsed:.2f} images/sec")
