"""mlbench: train and benchmark the classic CNNs and BERT on TF2 + tf_keras."""
from setuptools import find_packages, setup

setup(
    name="mlbench",
    version="0.1.0",
    description="tf_cnn_benchmarks-style throughput and MLPerf-style time-to-quality runs on TF2",
    packages=find_packages(include=["mlbench", "mlbench.*"]),
    python_requires=">=3.10,<3.13",
    install_requires=[
        "tensorflow~=2.20.0",
        "tf-keras~=2.20.0",
        "tf-models-official==2.20.0",
        "tensorflow-text~=2.20.0",
        "tensorflow-datasets~=4.9.0",
        "importlib_resources",
        "gin-config",
        "absl-py",
        "mlperf-logging~=4.1",
        "scikit-learn",
        "mlxtend",
        "matplotlib",
    ],
    entry_points={"console_scripts": ["mlbench=mlbench.cli:run_main"]},
)
