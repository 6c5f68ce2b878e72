"""Values of command-line text: the parsers `mlbench.cli` gives argparse as `type=`.

Plain functions of a string (no flags are defined here).
"""
import argparse
import ast


def literal(text):
    """A Python literal (number, dict, list, None, True) or, failing that, the string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def mapping(text):
    """`top1=0.97,top5=0.99` or a Python dict literal → dict."""
    value = literal(text)
    if isinstance(value, dict) or value is None:
        return value
    try:
        return {k.strip(): literal(v) for k, v in (p.split("=", 1) for p in text.split(","))}
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not key=value[,key=value] "
                                         "or a dict") from None


def names(text):
    """`accuracy,top5` or a Python list literal → list."""
    value = literal(text)
    if isinstance(value, (list, tuple)):
        return list(value)
    return [part.strip() for part in text.split(",") if part.strip()]


def boolean_or_auto(text):
    lowered = text.lower()
    if lowered not in ("true", "false", "auto"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected true, false or auto")
    return "auto" if lowered == "auto" else lowered == "true"
