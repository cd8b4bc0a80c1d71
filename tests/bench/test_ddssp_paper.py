"""The ddssp-paper benchmark runner on the bundled example (fast settings)."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddssp import bench
from ddssp.bench.metrics import accuracy, auc_score, log_loss, mse
from ddssp.cli import main
from ddssp.errors import WorkloadError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_SPEC = ROOT / "workloads" / "example-linear.toml"


def _brute_auc(y, s):
    pos, neg = s[y == 1], s[y == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return wins / (len(pos) * len(neg))


def test_auc_matches_pair_counting_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(5, 60))
        y = rng.integers(0, 2, n)
        if y.min() == y.max():
            continue
        s = rng.integers(0, 6, n).astype(float)  # many ties
        assert auc_score(y, s) == pytest.approx(_brute_auc(y, s), abs=1e-12)
        assert auc_score(2 * y - 1, s) == pytest.approx(_brute_auc(y, s), abs=1e-12)
    y = np.array([0, 0, 1, 1])
    assert auc_score(y, [0.1, 0.2, 0.8, 0.9]) == 1.0
    assert auc_score(y, [0.9, 0.8, 0.2, 0.1]) == 0.0
    assert auc_score(y, [1, 1, 1, 1]) == 0.5
    assert math.isnan(auc_score([1, 1, 1], [0.1, 0.2, 0.3]))
    assert mse([1, 2], [1, 4]) == 2.0


def _spec_file(tmp_path, **changes):
    text = EXAMPLE_SPEC.read_text()
    lines = []
    for line in text.splitlines():
        key = line.split("=")[0].strip()
        if key in changes:
            continue
        lines.append(line)
    head = [f"{k} = {v}" for k, v in changes.items() if v is not None]
    p = tmp_path / "spec.toml"
    # top-level keys must come before the [aim] table
    p.write_text("\n".join(head) + "\n" + "\n".join(lines).replace('"../examples/', f'"{ROOT}/examples/') + "\n")
    return p


def test_baselines_on_example(tmp_path):
    out = tmp_path / "out"
    # eps = 1e16 as "no noise": AdaSSP's noise is inflated for eps >~ 23 to keep its OpenDP-checked
    # guarantee (sigma ~ 1.2 B^2 / sqrt(eps)), so 1e9 is no longer noise-free to 1e-5
    results, summary = bench.run_bench(
        EXAMPLE_SPEC, out, methods=["public", "adassp"], eps=[0.5, 1e16], trials=2, quiet=True
    )
    assert list(results.columns) == ["method", "epsilon", "trial", "metric", "value", "seconds"]
    assert len(results) == 2 * 2 * 2
    assert set(results["metric"]) == {"mse"}
    assert np.all(np.isfinite(results["value"])) and np.all(results["seconds"] >= 0)
    pub = results[results.method == "public"]["value"]
    assert pub.nunique() == 1  # the public fit is computed once
    # AdaSSP at eps -> infinity is the public least-squares fit (same encoding, intercept column)
    ada_big = results[(results.method == "adassp") & (results.epsilon == 1e16)]["value"]
    assert np.allclose(ada_big, pub.iloc[0], rtol=1e-5)
    ada_small = results[(results.method == "adassp") & (results.epsilon == 0.5)]["value"]
    assert ada_small.mean() > pub.iloc[0]
    for name in ("results.csv", "summary.csv", "plot.png"):
        assert (out / name).exists()
    # same seed: the same non-noise numbers (public), but AdaSSP's DP noise is secure (OpenDP, no
    # seed reaches it), so its errors differ between runs
    again, _ = bench.run_bench(
        EXAMPLE_SPEC, tmp_path / "again", methods=["public", "adassp"], eps=[0.5, 1e16], trials=2, quiet=True
    )
    pub_again = again[again.method == "public"]["value"].to_numpy()
    assert np.array_equal(pub_again, pub.to_numpy())
    ada_again = again[(again.method == "adassp") & (again.epsilon == 0.5)]["value"].to_numpy()
    assert not np.array_equal(ada_again, ada_small.to_numpy())


def test_objpert_on_example_logistic(tmp_path):
    spec = _spec_file(
        tmp_path,
        task='"logistic"',
        target='"high_income"',
        methods='["objpert", "public"]',
        drop='["education", "income_score", "capital_gain"]',
        train_rows=2000,
    )
    results, _ = bench.run_bench(spec, tmp_path / "out", eps=[0.5, 1e9], quiet=True)
    assert set(results["metric"]) == {"auc", "accuracy", "log_loss"}  # the logistic default
    acc = results[results.metric == "accuracy"].set_index(["method", "epsilon"])["value"]
    assert 0.5 < acc[("public", 0.5)] <= 1.0
    assert acc[("objpert", 1e9)] == pytest.approx(acc[("public", 0.5)], abs=0.02)
    ll = results[results.metric == "log_loss"].set_index(["method", "epsilon"])["value"]
    assert 0 < ll[("public", 0.5)] < math.log(2)  # better than the coin
    auc = results[results.metric == "auc"].set_index(["method", "epsilon"])["value"]
    assert 0.5 < auc[("public", 0.5)] <= 1.0
    # ObjPert at eps -> infinity approaches the non-private fit (public has a tiny ridge of 1)
    assert auc[("objpert", 1e9)] == pytest.approx(auc[("public", 0.5)], abs=0.01)
    # the release-based methods run on a logistic task too (one release, DD-SSP via Chebyshev)
    results, _ = bench.run_bench(spec, tmp_path / "out2", eps=[1.0], methods=["ddssp", "aim-synth"], quiet=True)
    assert set(results["method"]) == {"ddssp", "aim-synth"}
    auc = results[results.metric == "auc"]["value"]
    assert np.all((auc > 0.5) & (auc <= 1.0))


def test_release_methods_share_one_release(tmp_path, monkeypatch):
    """ddssp and aim-synth use ONE release per (eps, trial); adassp/public need none."""
    from ddssp.bench import ddssp_paper

    calls = []
    real = ddssp_paper._release

    def counting(codes, schema, eps, s, target, rng, callback=None):
        calls.append(eps)
        return real(codes, schema, eps, s, target, rng, callback)

    monkeypatch.setattr(ddssp_paper, "_release", counting)
    results, _ = bench.run_bench(EXAMPLE_SPEC, tmp_path / "out", eps=[1.0], trials=1, quiet=True)
    assert calls == [1.0]
    assert set(results["method"]) == {"ddssp", "aim-synth", "adassp", "public"}
    assert np.all(np.isfinite(results["value"]))
    vals = results.set_index("method")["value"]
    # every private method is worse than or about as good as the public fit, and not absurd:
    # the target lies in [-1, 1], so predicting 0 gives an MSE of at most 1
    for m in ("ddssp", "aim-synth", "adassp"):
        assert vals[m] > vals["public"] * 0.9
        assert vals[m] < 1.0
    calls.clear()
    bench.run_bench(EXAMPLE_SPEC, tmp_path / "out2", eps=[1.0], trials=1, methods=["adassp", "public"], quiet=True)
    assert calls == []


def test_stopped_run_keeps_finished_cells_and_resumes(tmp_path, monkeypatch):
    """A run that dies part-way leaves its finished cells in results.csv (no summary.csv); a plain rerun
    is refused with a hint, ``resume=True`` finishes it and recomputes only the missing cells."""
    from ddssp.estimators import adassp

    out = tmp_path / "out"
    real_fit, fits = adassp.AdaSSP.fit, []

    def failing_fit(self, X, y):
        fits.append(self.eps)
        if len(fits) == 3:
            raise KeyboardInterrupt
        return real_fit(self, X, y)

    kw = dict(methods=["public", "adassp"], eps=[0.5, 1.0], trials=2, quiet=True)
    monkeypatch.setattr(adassp.AdaSSP, "fit", failing_fit)
    with pytest.raises(KeyboardInterrupt):
        bench.run_bench(EXAMPLE_SPEC, out, **kw)
    assert not (out / "summary.csv").exists()
    partial = pd.read_csv(out / "results.csv")
    assert len(partial) == 2 * 2  # two finished (eps, trial) cells x two methods
    assert set(zip(partial.epsilon, partial.trial)) == {(0.5, 0), (0.5, 1)}
    with pytest.raises(WorkloadError, match="--resume"):
        bench.run_bench(EXAMPLE_SPEC, out, **kw)
    with pytest.raises(WorkloadError, match="different eps"):
        bench.run_bench(EXAMPLE_SPEC, out, resume=True, **dict(kw, eps=[0.5, 2.0]))

    def counting_fit(self, X, y):
        fits.append(self.eps)
        return real_fit(self, X, y)

    monkeypatch.setattr(adassp.AdaSSP, "fit", counting_fit)
    fits.clear()
    results, _ = bench.run_bench(EXAMPLE_SPEC, out, resume=True, **kw)
    assert fits == [1.0, 1.0]  # only the two missing cells were computed
    assert (out / "summary.csv").exists()
    # the finished cells of the stopped run are the same numbers as in the full run (read back from the file: AdaSSP's noise is secure)
    full = results.set_index(["method", "epsilon", "trial"])["value"]
    for row in partial.itertuples():
        assert full[(row.method, row.epsilon, row.trial)] == pytest.approx(row.value, rel=1e-12)
    assert len(results) == 2 * 2 * 2


@pytest.mark.parametrize(
    "changes,match",
    [
        (dict(colour='"red"'), "unknown key"),
        (dict(methods='["objpert"]'), "not available"),
        (dict(task='"poisson"'), "task"),
        (dict(drop='["years_education"]'), "target"),
        (dict(drop='["nope"]'), "not in the schema"),
        (dict(eps="[0.0]"), "positive"),
        (dict(delta="1.0"), "delta"),
        (dict(trials="0"), "trials"),
        (dict(train_rows="-3"), "train_rows"),
        (dict(domain='"x.json"'), "exactly one"),
    ],
)
def test_bad_specs(tmp_path, changes, match):
    spec = _spec_file(tmp_path, **changes)
    with pytest.raises(WorkloadError, match=match):
        bench.run_bench(spec, tmp_path / "out", quiet=True)


def test_bad_aim_key_and_missing_data(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(
        EXAMPLE_SPEC.read_text().replace("[aim]", "[aim]\nbogus = 1").replace('"../examples/', f'"{ROOT}/examples/')
    )
    with pytest.raises(WorkloadError, match="bogus"):
        bench.run_bench(spec, tmp_path / "out", quiet=True)
    spec.write_text(
        EXAMPLE_SPEC.read_text()
        .replace("../examples/census.csv", "nowhere.csv")
        .replace('"../examples/', f'"{ROOT}/examples/')
    )
    code = main(["bench", str(spec), "-o", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "nowhere.csv" in err and "Traceback" not in err


def test_adult_specs_parse(shared_data):
    """The shipped Adult specs load, resolve their files and encode the data (no fitting)."""
    from ddssp.bench.ddssp_paper import load_data, parse_spec

    for name in ("adult-linear.toml", "adult-logistic.toml"):
        path = ROOT / "workloads" / name
        spec = bench.load_spec(path)
        ctx = bench.BenchContext(spec_path=path, outdir=Path("."), data_dir=shared_data, quiet=True)
        s = parse_spec(spec, ctx)
        assert s["eps"] == [0.05, 0.1, 0.5, 1.0, 2.0] and s["delta"] == 1e-5 and s["trials"] == 5
        schema, train, test = load_data(spec, s, ctx, np.random.default_rng(0))
        assert len(test) == 1000 and 1000 < len(train) <= 50000
        assert s["target"] in schema.names and not set(s["drop"]) & set(schema.names)


def test_accuracy_and_log_loss():
    y = np.array([-1, -1, 1, 1])
    assert accuracy(y, [-2.0, 0.5, 1.0, -1.0]) == 0.5
    assert accuracy([0, 0, 1, 1], [-2.0, -0.5, 1.0, 3.0]) == 1.0
    assert log_loss(y, np.zeros(4)) == pytest.approx(math.log(2))
    s = np.array([-1.0, 2.0, 0.5, 3.0])
    p = 1 / (1 + np.exp(-s))
    want = -np.mean(np.log(np.where(y > 0, p, 1 - p)))
    assert log_loss(y, s) == pytest.approx(want, rel=1e-12)


def test_filter_recode_metrics_and_small_table(tmp_path):
    """A 3-level target whose third code marks unlabelled rows: `filter` drops them, `recode` makes the
    target binary (no hand-edited domain); `metrics` selects; a small table holds out a fraction and says so."""
    rng = np.random.default_rng(0)
    n = 889
    x = rng.integers(0, 4, n)
    surv = np.where(rng.uniform(size=n) < 0.15, 2, (rng.uniform(size=n) < 0.2 + 0.2 * x).astype(int))
    pd.DataFrame({"x": x, "z": rng.integers(0, 3, n), "Survived": surv}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "t.domain.json").write_text('{"x": 4, "z": 3, "Survived": 3}')
    base = (
        'train = "t.csv"\ndomain = "t.domain.json"\ncategorical = ["z", "Survived"]\ntarget = "Survived"\n'
        'task = "logistic"\neps = [1.0]\ndelta = 1e-6\nmethods = ["objpert", "public"]\n'
    )
    spec = tmp_path / "s.toml"
    spec.write_text(base)
    with pytest.raises(Exception, match="binary target"):
        bench.run_bench(spec, tmp_path / "o0", quiet=True)
    spec.write_text(
        base + 'filter = "Survived != 2"\nmetrics = ["accuracy", "log_loss"]\n'
        '[recode.Survived]\n0 = "died"\n1 = "survived"\n'
    )
    with pytest.warns(UserWarning, match=r"752 rows.*holding out 20% \(150 rows\)"):
        results, _ = bench.run_bench(spec, tmp_path / "o1", quiet=True)
    assert set(results.metric) == {"accuracy", "log_loss"}
    assert 0.5 < results[(results.metric == "accuracy") & (results.method == "public")]["value"].iloc[0] <= 1
    # without the filter the unlabelled code has no new value: the error says what to do
    spec.write_text(base + '[recode.Survived]\n0 = "died"\n1 = "survived"\n')
    with pytest.raises(WorkloadError, match=r"recode.Survived.*filter = \"Survived != 2\""):
        bench.run_bench(spec, tmp_path / "o2", quiet=True)
    for bad, match in (
        ('filter = "Survived ~ 2"', "column OP value"),
        ('filter = "nope == 1"', "not in the schema"),
        ('metrics = ["mse"]', "metrics"),
        ("test_rows = 1.5", "fraction"),
    ):
        spec.write_text(base + bad + "\n")
        with pytest.raises(WorkloadError, match=match):
            bench.run_bench(spec, tmp_path / "o3", quiet=True, force=True)
    # an explicit fraction is taken as asked
    spec.write_text(base + 'filter = "Survived != 2"\ntest_rows = 0.5\n[recode.Survived]\n0 = 0\n1 = 1\n')
    results, _ = bench.run_bench(spec, tmp_path / "o4", quiet=True)
    assert set(results.metric) == {"auc", "accuracy", "log_loss"}


def test_method_warnings_name_method_eps_and_trial(tmp_path, monkeypatch):
    from ddssp.estimators import adassp

    real_fit = adassp.AdaSSP.fit

    def noisy_fit(self, X, y):
        import warnings

        warnings.warn("X^T X is singular (test)", stacklevel=2)
        return real_fit(self, X, y)

    monkeypatch.setattr(adassp.AdaSSP, "fit", noisy_fit)
    with pytest.warns(UserWarning, match=r"^adassp, eps=0\.5, trial 1: X\^T X is singular"):
        bench.run_bench(EXAMPLE_SPEC, tmp_path / "o", methods=["adassp"], eps=[0.5], trials=2, quiet=True)


def test_raw_table_declared_vs_discovered_schema(tmp_path):
    """raw = true: `ddssp` uses the declared schema, `ddssp-discovered` discovers one per trial inside
    eps; both are scored on the raw test values (MSE in the target's own units)."""
    import json

    from tests.data.raw_table import make_raw_table

    make_raw_table(3000, seed=11).to_csv(tmp_path / "raw.csv", index=False)
    (tmp_path / "raw.schema.json").write_text(
        json.dumps(
            {
                "format": "ddssp-schema/1",
                "columns": [
                    {"name": "age", "kind": "numeric", "edges": [18, 30, 40, 50, 60, 70, 90]},
                    {"name": "years_education", "kind": "numeric", "values": list(range(8, 21))},
                    {"name": "hours", "kind": "numeric", "edges": [1, 20, 35, 40, 41, 50, 99]},
                    {"name": "gain", "kind": "numeric", "edges": [0, 1, 5000, 20000, 1000000]},
                    {
                        "name": "sector",
                        "kind": "categorical",
                        "levels": ["Private", "Public", "Self-employed", "Nonprofit"],
                        "missing": "<missing>",
                    },
                    {"name": "income", "kind": "categorical", "levels": ["<=50K", ">50K"]},
                ],
            }
        )
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        "\n".join(
            [
                'name = "raw"',
                f'train = "{tmp_path / "raw.csv"}"',
                f'schema = "{tmp_path / "raw.schema.json"}"',
                "raw = true",
                'na_values = ["?"]',
                'target = "years_education"',
                'task = "linear"',
                "eps = [2.0]",
                "delta = 1e-6",
                "trials = 1",
                'methods = ["ddssp", "ddssp-discovered", "public"]',
                "test_rows = 500",
                "[aim]",
                "rounds = 8",
                "max_model_size = 2.0",
            ]
        )
        + "\n"
    )
    results, _ = bench.run_bench(spec, tmp_path / "out", quiet=True)
    assert set(results["method"]) == {"ddssp", "ddssp-discovered", "public"}
    assert set(results["metric"]) == {"mse_original"}
    v = results.set_index("method")["value"]
    assert np.all(np.isfinite(v)) and v["public"] < 30  # years 8..20: MSE in years^2, not [-1, 1] units
    with pytest.raises(WorkloadError, match="raw"):
        bad = tmp_path / "bad.toml"
        bad.write_text(
            EXAMPLE_SPEC.read_text()
            .replace('methods = ["ddssp", "aim-synth", "adassp", "public"]', 'methods = ["ddssp-discovered"]')
            .replace('"../examples/', f'"{ROOT}/examples/')
        )
        bench.run_bench(bad, tmp_path / "out2", quiet=True)
