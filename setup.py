"""mlbench: train and benchmark the classic CNNs and BERT on TF2 + tf_keras.

The top-level `gin/` folder ships inside the wheel as the package data
`mlbench/gin/` (package_dir maps it), so an installed mlbench finds its gin
files from any working directory.
"""
import re

from setuptools import find_packages, setup


def version():
    with open("mlbench/version.py") as f:
        return re.search(r'__version__ = "([^"]+)"', f.read()).group(1)


def long_description():
    with open("README.md", encoding="utf-8") as f:
        return f.read()


setup(
    name="mlbench",
    version=version(),
    description="tf_cnn_benchmarks-style throughput and MLPerf-style time-to-quality runs on TF2",
    long_description=long_description(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    url="https://github.com/mlbench/mlbench",
    project_urls={"Documentation": "https://github.com/mlbench/mlbench/tree/main/docs",
                  "Changelog": "https://github.com/mlbench/mlbench/blob/main/CHANGELOG.md"},
    classifiers=[
        "Development Status :: 3 - Alpha",
        "Intended Audience :: Science/Research",
        "License :: OSI Approved :: Apache Software License",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
        "Topic :: System :: Benchmark",
    ],
    packages=find_packages(include=["mlbench", "mlbench.*"]) + ["mlbench.gin"],
    package_dir={"mlbench.gin": "gin"},
    package_data={"mlbench.gin": ["*.gin", "*/*.gin", "*/*/*.gin"],
                  "mlbench.distribute": ["crds/*"]},
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
        "tqdm",
        "mlperf-logging~=4.1",
        "scikit-learn",
        "mlxtend",
    ],
    # profile: TensorBoard's profile plugin, to open `--trace_dir` output in TensorBoard
    extras_require={"reports": ["matplotlib"], "test": ["pytest"],
                    "mlflow": ["mlflow-skinny"],
                    "profile": ["tensorboard-plugin-profile==2.20.9"]},
    entry_points={"console_scripts": ["mlbench=mlbench.cli:run_main"]},
)
