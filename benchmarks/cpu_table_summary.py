"""Collates the suite reports of benchmarks/cpu_table.sh into one Markdown table.

    .venv/bin/python benchmarks/cpu_table_summary.py runs/cpu_table/<stamp>

(cpu_table.sh writes each of its runs to a new runs/cpu_table/<date_time> folder.)
"""
import json
import os
import sys

MODELS = ["inception_v3", "resnet50", "resnet152", "alexnet", "vgg16"]


def load(root):
    cells = {}
    for variant in sorted(os.listdir(root)):
        path = os.path.join(root, variant, "results.json")
        if not os.path.exists(path):
            continue
        for r in json.load(open(path))["results"]:
            runs = r["runs"]
            cells[(variant, r["data"], r["model"])] = (r["images_per_sec"]["mean"],
                                                       r["images_per_sec"]["std"], len(runs),
                                                       runs[0]["num_steps"])
    return cells


def main(root):
    cells = load(root)
    columns = sorted({(v, d) for v, d, _ in cells}, key=lambda c: (c[0], c[1] != "synthetic"))
    print("| model | " + " | ".join(f"{v} {d}" for v, d in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for model in MODELS:
        row = []
        for v, d in columns:
            cell = cells.get((v, d, model))
            row.append(f"{cell[0]:.1f} ± {cell[1]:.1f}" if cell else "not run")
        print(f"| {model} | " + " | ".join(row) + " |")
    steps = {c[3] for c in cells.values()}
    runs = {c[2] for c in cells.values()}
    print(f"\nimages/sec: mean ± std over {sorted(runs)} runs of {sorted(steps)} timed steps "
          f"(after the warm-up), 1 device.")


if __name__ == "__main__":
    main(sys.argv[1])
