"""The `train` entry point's own modules: `api` (`mlbench.train`), `fit` (`mlbench.fit`),
`runner` (a plan's parts driven by the Loop), `result` (`TrainResult`) and `evaluation`
(`load`, `evaluate`, `export` and the sidecar after a run).

Named `trainer`, not `train`: a subpackage `mlbench.train` would become the attribute
`mlbench.train` once imported and hide the function of that name.
"""
