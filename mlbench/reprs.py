"""Bounded descriptions of user values for error messages and recorded configs.

An error message that echoes a value must stay readable: a numpy array, a
dataset or a DataSource holding arrays is described by its type and shape,
never printed, and any repr is cut to LIMIT characters.
"""
LIMIT = 200


def short(value, limit=LIMIT):
    """A description of `value` of at most `limit` characters."""
    text = _describe(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _describe(value):
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and not isinstance(value, type):
        return f"{type(value).__name__}(shape={tuple(shape)}, dtype={dtype})"
    if hasattr(value, "element_spec") and hasattr(value, "cardinality"):
        return f"tf.data.Dataset(element_spec={value.element_spec})"
    if type(value).__name__.endswith("Source") and hasattr(value, "kind"):
        return (f"{type(value).__name__}(name={getattr(value, 'name', '?')!r}, "
                f"kind={value.kind!r}, input_shape={getattr(value, 'input_shape', None)})")
    if isinstance(value, (tuple, list)) and len(value) <= 4:
        inner = ", ".join(_describe(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, dict) and len(value) <= 6:
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in value.items()) + "}"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"<function {getattr(value, '__module__', '?')}.{value.__qualname__}>"
    if type(value).__module__.startswith(("tf_keras", "keras")) and hasattr(value, "name"):
        return f"<{type(value).__name__} {value.name!r}>"
    return repr(value)


def recordable(value):
    """`value` as a JSON-able record: plain values as they are, others described."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(
            v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: recordable(v) for k, v in value.items()}
    return short(value)
