"""MLPerf-style time-to-quality runs: logging (the only importer of mlperf_logging), rules, scoring."""
