"""Each zoo model's training recipe: the optimizer and learning rate it learns with, at
any global batch.

A recipe states its rate at a reference batch and the rule that carries it to another
batch: linear scaling for SGD (Goyal et al. 2017, "Accurate, Large Minibatch SGD", and
tf_cnn_benchmarks' ResNet), with their gradual warm-up of 5 epochs once the batch is
larger than the reference (the reference batch itself needs none); square-root scaling
for LAMB (You et al. 2020, the LAMB paper's rule). The rate used and the rule that gave
it are recorded (`ran['objective_from']['learning_rate']`, result.json). An explicit
learning rate always wins; MLPerf's closed recipes set theirs explicitly (gin files).

The small CPU variants' recipes are mlbench's own, measured on the bundled data
(docs/models.md, "Recipes"); the full models' are their references' as cited.
"""
import dataclasses
import math
from typing import Optional


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A model's update rule at a reference global batch.

    Attributes:
      optimizer: the optimizer's name (`mlbench.training.optimizers.OPTIMIZERS`).
      learning_rate: the rate at `reference_batch`.
      reference_batch: the global batch the rate was set for.
      scaling: 'linear' (rate × batch / reference) or 'sqrt' (rate × √(batch / reference)).
      warmup_epochs: linear warm-up from 0, in epochs, when the batch exceeds the reference.
      source: where the recipe comes from.
    """
    optimizer: str
    learning_rate: float
    reference_batch: int
    scaling: str
    warmup_epochs: float
    source: str

    def rate_at(self, global_batch):
        """The learning rate at `global_batch`, by the recipe's scaling rule."""
        ratio = global_batch / self.reference_batch
        return self.learning_rate * (ratio if self.scaling == "linear" else math.sqrt(ratio))

    def rule(self, global_batch):
        """How the rate at `global_batch` was found, in words (recorded with the run)."""
        scale = (f"× {global_batch} / {self.reference_batch}" if self.scaling == "linear"
                 else f"× √({global_batch} / {self.reference_batch})")
        return (f"recipe: {self.learning_rate:g} {scale} = {self.rate_at(global_batch):.6g} "
                f"({self.scaling} scaling; {self.source})")

    def warmup_steps(self, global_batch, examples_per_epoch):
        """Warm-up steps at `global_batch`: the recipe's epochs when the batch exceeds the
        reference (0 otherwise, or when the epoch's size is unknown)."""
        if global_batch <= self.reference_batch or not self.warmup_epochs or \
                not examples_per_epoch:
            return 0
        return int(round(self.warmup_epochs * examples_per_epoch / global_batch))


GOYAL = "Goyal et al. 2017; tf_cnn_benchmarks' ResNet"
TF_CNN = "tf_cnn_benchmarks' default for the model"
OWN = "mlbench's, measured on the bundled digits and MNIST"
LAMB_OWN = "mlbench's, measured on the bundled BERT data; LAMB's square-root rule"
MLPERF_BERT = "MLPerf's BERT reference (LAMB 4e-4 at 448); LAMB's square-root rule"

_RESNET = Recipe("sgd", 0.1, 256, "linear", 5, GOYAL)
_SMALL = Recipe("sgd", 0.1, 256, "linear", 0, OWN)
_BERT_SMALL = Recipe("lamb", 5e-3, 64, "sqrt", 0, LAMB_OWN)
_BERT_LARGE = Recipe("lamb", 4e-4, 448, "sqrt", 0, MLPERF_BERT)

RECIPES = {
    "resnet50": _RESNET, "resnet152": _RESNET, "resnet50_v1": _RESNET,
    "resnet_tiny": dataclasses.replace(_RESNET, source=GOYAL + "; checked on the digits"),
    "alexnet": Recipe("sgd", 0.005, 512, "linear", 0, TF_CNN),
    "inception_v3": Recipe("sgd", 0.005, 32, "linear", 0, TF_CNN),
    "vgg16": Recipe("sgd", 0.01, 256, "linear", 0, "Simonyan & Zisserman 2015"),
    "simple_cnn": _SMALL, "mlp": _SMALL, "alexnet_tiny": _SMALL, "vgg_tiny": _SMALL,
    "inception_tiny": _SMALL,
    "bert_tiny": _BERT_SMALL, "bert_mini": _BERT_SMALL, "bert_small": _BERT_SMALL,
    "bert_medium": _BERT_SMALL, "bert_base": _BERT_LARGE, "bert_large": _BERT_LARGE,
}


def for_model(name) -> Optional[Recipe]:
    """The zoo model's recipe, or None (a model registered by the user has none)."""
    return RECIPES.get(name)
