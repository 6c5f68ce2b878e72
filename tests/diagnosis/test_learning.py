"""`diagnosis.learning`: a run that got worse, whose loss rose or that ended at chance is
a problem naming the learning rate; a learning run is ok."""
from mlbench.diagnosis import learning


def history(losses, evals):
    """Loop records: a loss per block, eval metrics on the blocks given."""
    records = [{"step": 10 * (i + 1), "loss": loss} for i, loss in enumerate(losses)]
    for index, metrics in evals.items():
        records[index]["metrics"] = metrics
    return records


def test_a_metric_below_its_best_by_more_than_its_noise_is_a_problem():
    found = learning.finding(history([2.0, 1.0, 1.5], {1: {"top1": 0.37, "eval_loss": 1.5},
                                                       2: {"top1": 0.29, "eval_loss": 1.7}}),
                             0.1, "argument", eval_examples=1000, num_classes=10)
    assert (found.status, found.verdict) == ("problem", "got worse")
    assert found.figures["best"] == 0.37 and found.figures["last"] == 0.29
    assert "0.1 (argument)" in found.advice and "0.025" in found.advice


def test_within_noise_is_ok_and_a_rising_loss_is_a_problem():
    # 2 binomial standard errors at 0.9 on 100 examples: 0.06
    ok = learning.finding(history([2.0, 1.0, 0.9], {1: {"top1": 0.90}, 2: {"top1": 0.86}}),
                          0.1, "recipe", eval_examples=100, num_classes=10)
    assert ok.status == "ok" and ok.verdict == "learning"
    rose = learning.finding(history([2.0, 2.5, 3.0], {}), 0.5, "argument")
    assert (rose.status, rose.verdict) == ("problem", "loss rose")


def test_an_accuracy_at_chance_is_a_problem_even_when_it_never_fell():
    found = learning.finding(history([3.0, 2.3, 2.3], {1: {"top1": 0.10}, 2: {"top1": 0.11}}),
                             0.3, "argument", eval_examples=1000, num_classes=10)
    assert (found.status, found.verdict) == ("problem", "at chance")


def test_a_loss_metric_is_judged_lower_is_better():
    found = learning.finding(history([2.0, 1.0, 1.2], {1: {"eval_loss": 1.0},
                                                       2: {"eval_loss": 1.3}}), 0.1, "x")
    assert found.status == "problem" and found.figures["metric"] == "eval_loss"
