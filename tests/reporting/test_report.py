"""The HTML results page (rendered by headless Chromium) and `mlbench compare`."""
import html.parser
import json
import os
import shutil
import struct
import subprocess

import pytest

import mlbench
from mlbench.bench import suite
from mlbench import page
from mlbench.files import write_json
from mlbench.reporting import compare, content, sources
from harness import StepClock, mlbench_process

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Offline and quiet: no background requests, every host unresolvable, a dead proxy.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9")


def timed_result(folder, step_s, seed):
    result = mlbench.benchmark("resnet_tiny", batch_size=8, num_warmup_batches=1,
                               num_batches=5, num_runs=3, clock=StepClock(step_s, 0.02, seed),
                               verbose=False)
    os.makedirs(folder)
    write_json(os.path.join(folder, "result.json"), result.to_dict(), indent=1)
    return result


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A suite, a train run, and three timed benchmarks (same, same, 20 % slower)."""
    root = tmp_path_factory.mktemp("runs")
    results, _ = suite.run_named(
        "cpu_tiny", ["benchmark_suite.num_batches = 3", "benchmark_suite.num_runs = 2",
                     "benchmark_suite.num_warmup_batches = 1"],
        output_dir=str(root / "suite"), project=8, verbose=False)
    trained = mlbench.train(model="simple_cnn", data="digits", global_batch_size=32,
                            train_steps=20, steps_per_loop=5, eval_every=10,
                            model_options={"image_size": 8}, model_dir=str(root / "train"),
                            verbose=False)
    for name, step_s, seed in (("base", 0.1, 0), ("same", 0.1, 1), ("slow", 0.125, 2)):
        timed_result(str(root / name), step_s, seed)
    return root, results, trained


class Tables(html.parser.HTMLParser):
    """{table id: [[(text, data-value or None), ...] per body row]} of a DOM."""

    def __init__(self):
        super().__init__()
        self.tables, self.current, self.cell = {}, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.current = self.tables.setdefault(attrs.get("id"), [])
        elif tag == "tr" and self.current is not None:
            self.current.append([])
        elif tag in ("td", "th") and self.current is not None:
            self.cell = [tag, "", attrs.get("data-value")]

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[1] += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            if self.cell[0] == "td":
                self.current[-1].append((self.cell[1], self.cell[2]))
            self.cell = None
        elif tag == "table":
            self.current = None


def chromium(*arguments, cwd):
    if CHROMIUM is None:
        pytest.fail("headless Chromium is needed (Debian's `chromium`; .ci/run installs it)")
    return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={cwd}/profile",
                           *arguments], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_page_renders_offline_in_a_browser_with_the_figures_of_results_json(runs, tmp_path):
    root, results, _ = runs
    out = mlbench_process("report", str(root / "suite"), str(root / "train"),
                          f"--output={tmp_path / 'page.html'}")
    assert out.returncode == 0, out.stderr[-2000:]
    text = (tmp_path / "page.html").read_text()
    assert "http" not in text and "<script" not in text  # nothing leaves the page
    assert oct(os.stat(tmp_path / "page.html").st_mode & 0o777) == oct(0o666 & ~_umask())
    dom = chromium("--dump-dom", f"file://{tmp_path / 'page.html'}", cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for needle in ("Environment", "tensorflow", "cpu_cores", "Method",
                   "Training synthetic data: images/sec", "Scaling efficiency",
                   "Model-FLOPs utilisation", "Projected, not measured",
                   "Loss and metrics", "data:image/png;base64,",
                   "Diagnosis: what set the pace"):
        assert needle in dom.stdout, needle
    tables = Tables()
    tables.feed(dom.stdout)
    shown = tables.tables["s0-synthetic-table"]
    saved = json.load(open(root / "suite" / "results.json"))["results"]
    means = {(r["num_devices"], r["model"]): r["images_per_sec"]["mean"] for r in saved}
    for row in shown[1:]:  # the header row has no td
        devices = int(row[0][0])
        for (cell_text, value), model in zip(row[1:], ["resnet_tiny", "alexnet_tiny"]):
            assert float(value) == means[(devices, model)]
            assert cell_text.startswith(content.fmt(means[(devices, model)]) + " ± ")
    trained = json.load(open(root / "train" / "result.json"))["diagnosis"]
    assert [(r[0][0], r[2][0], r[3][0]) for r in tables.tables["s1-diagnosis-table"][1:]] == [
        (f["topic"], f["verdict"], f["detail"]) for f in trained]
    suite_rows = tables.tables["s0-diagnosis-table"][1:]
    assert {(r[0][0], r[1][0], r[3][0], r[5][0]) for r in suite_rows} == {
        (r["model"], str(r["num_devices"]), f["topic"], f["verdict"]) for r in saved
        for f in r["diagnosis"]}
    sidecar = json.load(open(tmp_path / "page.json"))
    curves = next(s for s in sidecar["sections"] if s["id"] == "s1-curves")["series"]
    losses = [h["loss"] for h in runs[2].history]
    assert [v for _, v in curves["train/loss"]] == pytest.approx(losses, rel=1e-6)
    shot = chromium("--screenshot=shot.png", "--window-size=1000,1800",
                    f"file://{tmp_path / 'page.html'}", cwd=tmp_path)
    png = (tmp_path / "shot.png").read_bytes()
    assert shot.returncode == 0 and png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1000, 1800) and len(png) > 20_000


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def run_compare(*arguments):
    return mlbench_process("compare", *arguments)


def test_compare_finds_a_known_slowdown_and_passes_noise(runs):
    root = runs[0]
    slow = run_compare(str(root / "base"), str(root / "slow"), "--fail_on_regression=5%")
    assert slow.returncode == 1, slow.stdout + slow.stderr[-1500:]
    row = next(line for line in slow.stdout.splitlines() if line.startswith("resnet_tiny"))
    assert "\tslower  REGRESSION" in row and "\t0.80" in row  # 0.1 s → 0.125 s steps, ±2 %
    same = run_compare(str(root / "base"), str(root / "same"), "--fail_on_regression=5%")
    assert same.returncode == 0, same.stdout + same.stderr[-1500:]
    assert "within noise" in same.stdout and "REGRESSION" not in same.stdout
    judged = compare.compare(str(root / "base"), str(root / "same"))
    assert abs(judged.rows[0].ratio - 1) < judged.rows[0].noise < 0.05
    bad = run_compare(str(root / "base"), str(root / "slow"), "--fail_on_regression=five")
    assert bad.returncode == 2 and "`fail_on_regression` ('five')" in bad.stderr


def test_report_of_two_benchmarks_has_the_comparison_section(runs, tmp_path):
    root = runs[0]
    written, sidecar = mlbench.report([str(root / "base"), str(root / "slow")],
                                      str(tmp_path / "r.html"))
    figures = json.load(open(sidecar))
    compared = next(s for s in figures["sections"] if s["id"] == "compare-1")
    assert compared["rows"][0][-1] == "slower"
    method = next(s for s in figures["sections"] if s["id"] == "s0-method")["facts"]
    assert method["warm-up / timed steps / runs"] == "1 / 5 / 3"
    assert compared["rows"][0][5]["value"] == pytest.approx(0.8, rel=0.02)


def test_published_gpu_anchors_are_the_pages_one_gpu_rows():
    source = sources.Source("benchmark", "x", "x")
    [section] = content.published("s0", source, ["resnet50", "resnet_tiny"])
    assert section.columns == ["platform (1 GPU)", "ResNet-50"]
    dgx1 = page.published("dgx1_p100").synthetic[1]["resnet50"]
    assert section.rows[0][0] == "DGX-1 P100" and section.rows[0][1]["value"] == dgx1
    assert "Published elsewhere" in section.note


def test_a_directory_without_results_is_refused_before_writing(tmp_path):
    with pytest.raises(ValueError, match="no directory holding results.json, result.json or inference.json"):
        mlbench.report([str(tmp_path)], str(tmp_path / "out" / "r.html"))
    assert not (tmp_path / "out").exists()


def test_an_inference_sweep_has_its_table_with_the_records_figures(tmp_path):
    result = mlbench.infer("simple_cnn", batch_sizes=[1, 8], num_warmup_batches=1,
                           min_batches=3, min_seconds=0.0, precision="float32",
                           verbose=False)
    from mlbench.results import files
    files.write(str(tmp_path / "sweep"), result)
    written, sidecar = mlbench.report([str(tmp_path / "sweep")], str(tmp_path / "r.html"))
    figures = json.load(open(sidecar))
    table = next(s for s in figures["sections"] if s["id"] == "s0-latency")
    assert [row[0] for row in table["rows"]] == ["1", "8"]
    for row, stats in zip(table["rows"], result.rows):
        assert row[1]["value"] == stats.examples_per_sec and row[6]["value"] == stats.p99_ms
        assert row[9]["value"] == stats.peak_memory_mb
    facts = next(s for s in figures["sections"] if s["id"] == "s0-facts")["facts"]
    assert facts["precision"] == "float32" and "high-water" in facts["peak memory"]
    assert "Latency and throughput per batch size" in open(written).read()
