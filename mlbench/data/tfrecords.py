"""Finding and checking TFRecord files before any work starts.

tf.data reports a corrupt or truncated record mid-run without the file name;
these checks name the file and the feature up front instead. 'full' reads
every record of every file (the default below 1 GB in total); 'first' checks
the first record of each file (cheap on full ImageNet); 'none' skips.
"""
import glob
import os

import tensorflow as tf

FULL_CHECK_BYTES = 1 << 30


def find_files(data_dir, pattern, argument="data_dir"):
    """Files in `data_dir` matching `pattern`, sorted; clear errors otherwise."""
    if not data_dir:
        raise ValueError(f"`{argument}` is required for TFRecord data; got {data_dir!r}.")
    if not os.path.isdir(data_dir):
        raise ValueError(f"`{argument}` ({data_dir!r}) is not a directory.")
    files = sorted(glob.glob(os.path.join(data_dir, pattern)))
    if not files:
        raise ValueError(f"`{argument}` ({data_dir!r}) has no files matching {pattern!r}.")
    return files


def check_files(files, required_features, verify="auto", validate=None):
    """Reads records of `files` and checks each has `required_features`.

    Args:
      files: TFRecord paths.
      required_features: feature names every record must carry.
      verify: 'auto' | 'full' | 'first' | 'none' (see module docstring).
      validate: optional callable(tf.train.Example, path) raising ValueError.

    Raises:
      ValueError: a corrupt/truncated file or a record missing a feature, naming the file.
    """
    if verify == "auto":
        verify = "full" if sum(os.path.getsize(f) for f in files) < FULL_CHECK_BYTES else "first"
    if verify not in ("full", "first", "none"):
        raise ValueError(f"`verify` ({verify!r}) must be 'auto', 'full', 'first' or 'none'.")
    if verify == "none":
        return
    for path in files:
        _check_file(path, required_features, verify == "first", validate)


def _check_file(path, required_features, first_only, validate):
    count = 0
    try:
        for raw in tf.data.TFRecordDataset(path):
            example = tf.train.Example.FromString(raw.numpy())
            missing = [k for k in required_features if k not in example.features.feature]
            if missing:
                raise ValueError(f"{path}: record {count} is missing feature(s) {missing}.")
            if validate:
                validate(example, path)
            count += 1
            if first_only:
                break
    except tf.errors.DataLossError as e:
        raise ValueError(f"{path}: corrupt or truncated TFRecord after {count} records "
                         f"({e.message.splitlines()[0]}).") from e
    if count == 0:
        raise ValueError(f"{path}: holds no records.")


class CorruptDataError(RuntimeError):
    """A corrupt or truncated TFRecord met while training; names the file."""


def locate_corruption(source, error):
    """The CorruptDataError for a DataLossError that tf.data raised mid-run.

    tf.data's message says "corrupted record at <offset>" without the file, so
    the source's files are read again, fully, to find and name the one at fault.
    """
    files = tuple(getattr(source, "train_files", ())) + tuple(getattr(source, "eval_files", ()))
    for path in files:
        try:
            _check_file(path, (), first_only=False, validate=None)
        except ValueError as found:
            return CorruptDataError(f"training stopped: {found}")
    return CorruptDataError(f"training stopped: corrupt data in {source.name!r} "
                            f"({error.message.splitlines()[0]}); no single file could be named.")
