"""`resolve(arguments) -> RunPlan`: every check of bad input, before anything is built or written.

Data flows one way: arguments + gin → RunPlan → Parts (`mlbench.plan.parts.build`)
→ Loop → result. A RunPlan holds every decision a run depends on, resolved
to concrete values (steps, not epochs; a policy name, not 'auto'; a strategy
object and its replica count), grouped in small frozen parts (`record`).
`resolve` (train, mlperf) and `resolve_benchmark` share the resolvers
(`resolvers`) and the checks (`checks`); they may read data sizes and create
the strategy, but build no model, write no file and run no step.
"""
from mlbench.plan.record import (Cadence, Distribution, ModelPlan, Numerics, Objective,
                                 RunDirectory, RunPlan)
from mlbench.plan.train import resolve, train_arguments

__all__ = ["resolve", "train_arguments", "RunPlan", "ModelPlan",
           "Distribution", "Numerics", "Cadence", "RunDirectory", "Objective"]
