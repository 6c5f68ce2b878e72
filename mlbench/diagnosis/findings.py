"""One finding of a diagnosis: a topic, a verdict, the figures behind it, what to change."""
import dataclasses
from typing import Any, Dict

STATUSES = ("ok", "warning", "problem")


@dataclasses.dataclass
class Finding:
    """What one measurement says about a run.

    Attributes:
      topic: 'input', 'compile', 'numerics' or 'scaling'.
      status: 'ok' (nothing to change), 'warning' (worth a look) or 'problem' (it cost
        the run throughput or quality).
      verdict: a few words ('input-bound', 'compute-bound', 'retraced after warm-up', ...).
      detail: one sentence with the measured figures.
      figures: those figures by name (what the sentence says, for programs).
      advice: what would change the verdict ('' when nothing needs to).
    """
    topic: str
    status: str
    verdict: str
    detail: str
    figures: Dict[str, Any] = dataclasses.field(default_factory=dict)
    advice: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"`status` ({self.status!r}) must be one of {STATUSES}.")

    def to_dict(self):
        return dataclasses.asdict(self)

    def line(self):
        advice = f" {self.advice}" if self.advice else ""
        return f"DIAGNOSIS {self.topic}: {self.verdict} ({self.status}). {self.detail}{advice}"


def lines(diagnosis):
    """The printed lines of a diagnosis (a list of findings or of their dicts)."""
    return [(f if isinstance(f, Finding) else Finding(**f)).line() for f in diagnosis or ()]
