"""The kind of a model's input, decided in one place: 'image' (H, W, C: adapted like the
zoo's image models), 'vector' (anything else), or 'bert' (token ids, masked positions:
only the registry says so, never a shape). Models and data sources carry the value;
everything else reads it."""
INPUT_KINDS = ("image", "vector", "bert")


def kind_of(input_shape):
    """'image' for (H, W, C) inputs, else 'vector'."""
    return "image" if input_shape is not None and len(input_shape) == 3 else "vector"
