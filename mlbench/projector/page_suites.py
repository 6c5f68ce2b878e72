"""The benchmarks page as the projector reads it: each suite's figures with the
communication pattern of every model (the golden data of `validation` and of the η fits)."""
from typing import Dict, NamedTuple

from mlbench import page
from mlbench.projector.throughput import pattern_for


class SuiteFigures(NamedTuple):
    batch_sizes: Dict[str, int]
    patterns: Dict[str, str]
    synthetic: Dict[int, Dict[str, float]]
    base_devices: int


def page_suite(name):
    """A page suite's figures, each model's variable_update mapped to its pattern."""
    figures = page.published(name)
    return SuiteFigures(figures.batch_sizes,
                        {m: pattern_for(*update) for m, update in figures.variable_updates.items()},
                        figures.synthetic, figures.base_devices)
