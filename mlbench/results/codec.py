"""Records ⇄ JSON values, driven by the records' own type hints.

`encode(record)` writes a record; `decode(Record, value)` rebuilds it, nested records
included (a field typed `Stats` becomes a `Stats`, `List[RunStats]` a list of them).
Written here because neither the standard library nor TensorFlow's stack decodes nested
dataclasses; a field missing from an older file takes its default, a field this mlbench
does not know (a newer file of the same schema) is left out.
"""
import dataclasses
import functools
import typing


class DecodeError(ValueError):
    """A value that does not fit its record: names the field path and what was found."""


def encode(record):
    """The JSON value of a record (nested records become objects); fields marked
    NOT_IN_FILE (a model, an optimizer) are left out."""
    return {key_of(f): _plain(getattr(record, f.name))
            for f in dataclasses.fields(record) if in_file(f)}


def _is_record(value):
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _plain(value):
    """Lists and mappings holding records, as JSON values."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return encode(value) if _is_record(value) else value


def decode(hint, value, path=""):
    """`value` (parsed JSON) as `hint` says: a record, a list, a mapping, an optional."""
    if dataclasses.is_dataclass(hint):
        return _record(hint, value, path)
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin is typing.Union:
        if value is None and type(None) in arguments:
            return None
        inner = [a for a in arguments if a is not type(None)]
        return decode(inner[0], value, path) if len(inner) == 1 else value
    if origin in (list, tuple) and arguments:
        _expect(value, list, path, "a list")
        return origin(decode(arguments[0], v, f"{path}[{i}]") for i, v in enumerate(value))
    if origin is dict and arguments:
        _expect(value, dict, path, "an object")
        return {k: decode(arguments[1], v, _joined(path, k)) for k, v in value.items()}
    return value


def _record(cls, value, path):
    _expect(value, dict, path, f"an object ({cls.__name__})")
    hints = _hints(cls)
    stored = [f for f in dataclasses.fields(cls) if f.init and in_file(f)]
    missing = [key_of(f) for f in stored if key_of(f) not in value
               and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise DecodeError(f"field {_joined(path, missing[0])!r} is missing")
    absent = {f.name: None for f in dataclasses.fields(cls) if f.init and not in_file(f)}
    return cls(**absent, **{f.name: decode(hints[f.name], value[key_of(f)],
                                           _joined(path, key_of(f)))
                            for f in stored if key_of(f) in value})


def _joined(path, name):
    return f"{path}.{name}" if path else name


NOT_IN_FILE = {"in_file": False}  # a field's metadata: live objects a file cannot hold


def in_file(field):
    return field.metadata.get("in_file", True)


def key_of(field):
    """The field's key in the file: its name, or `metadata["key"]` where the file's key is
    no Python name (run.json's model reference writes 'import')."""
    return field.metadata.get("key", field.name)


@functools.lru_cache(maxsize=None)
def _hints(cls):
    return typing.get_type_hints(cls)


def _expect(value, kind, path, name):
    if not isinstance(value, kind):
        where = f"field {path!r}" if path else "the file"
        raise DecodeError(f"{where} holds {type(value).__name__}, expected {name}")
