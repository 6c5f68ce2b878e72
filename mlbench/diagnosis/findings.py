"""One finding of a diagnosis: a topic, a verdict, the figures behind it, what to change.
The record itself (`Finding`) lives with the result records it is stored in."""
from mlbench.results.records import STATUSES, Finding  # noqa: F401


def lines(diagnosis):
    """The printed lines of a diagnosis (a list of findings)."""
    return [f.line() for f in diagnosis or ()]

__all__ = ["Finding", "STATUSES", "lines"]
