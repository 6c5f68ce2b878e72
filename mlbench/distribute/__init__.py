"""tf.distribute by name (`strategies`) and cluster membership from TF_CONFIG (`cluster`).

The tf_cnn_benchmarks `variable_update` vocabulary lives with benchmark mode
(`mlbench.distribute.variable_update`).
"""
from mlbench.distribute.cluster import is_chief, parse_tf_config, tf_config, tf_config_from_hosts
from mlbench.distribute.strategies import (ALL_REDUCE, STRATEGIES, facts, get_strategy,
                                           split_cpu, validate_strategy_name)

__all__ = ["ALL_REDUCE", "STRATEGIES", "facts", "get_strategy", "split_cpu",
           "validate_strategy_name", "is_chief", "parse_tf_config", "tf_config",
           "tf_config_from_hosts"]
