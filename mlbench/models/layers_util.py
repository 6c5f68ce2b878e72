"""Small helpers shared by the model factories."""
import tf_keras as keras


def float32_logits(x, name="logits_fp32"):
    """Casts logits to float32 so softmax/loss stay float32 under mixed precision."""
    return keras.layers.Activation("linear", dtype="float32", name=name)(x)


def check_image_size(name, image_size, minimum):
    if not isinstance(image_size, int) or image_size < minimum:
        raise ValueError(f"`image_size` ({image_size!r}) is too small for {name}: "
                         f"it needs at least {minimum} pixels per side.")
