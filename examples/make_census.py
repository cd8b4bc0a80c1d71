"""Generate examples/census.csv and examples/census.schema.json (synthetic, census-like, fixed seed).

    python examples/make_census.py [--rows 24000] [--seed 20261122] [--outdir examples] [--force]

Nothing here is real data. The table mixes categorical columns (sex, race, marital_status, education,
occupation, workclass) and numeric ones (age, years_education, hours_per_week, capital_gain), plus two
outcomes with a KNOWN signal, so that estimators can be checked against the truth:

Linear outcome (numeric, rounded to 0.1, then kept inside its bounds [0, 120]; clipping is rare)::

    income_score = 4.0
                   + 1.8     * years_education
                   + 0.22    * age
                   + 0.35    * hours_per_week
                   + 0.00015 * capital_gain
                   + 3.0     * [sex == "Male"]
                   + 2.5     * [marital_status == "Married"]
                   + Normal(0, 6^2) noise

Binary outcome (0/1), logistic::

    logit P(high_income = 1) = -12.0
                               + 0.38    * years_education
                               + 0.045   * age
                               + 0.055   * hours_per_week
                               + 0.00025 * capital_gain
                               + 0.9     * [sex == "Male"]
                               + 1.3     * [marital_status == "Married"]

(COEF_LINEAR and COEF_LOGISTIC below hold the same numbers.) race, occupation and workclass carry no
direct signal for either outcome (occupation depends on education, so it is correlated with them).

The schema is written from PUBLIC KNOWLEDGE constants in this file (official-looking code lists and
round-number bounds/edges chosen before looking at any data), never read from the generated table;
the script checks that the whole table encodes under it without clipping or errors.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROWS = 24_000
SEED = 20261122

COEF_LINEAR = {
    "intercept": 4.0,
    "years_education": 1.8,
    "age": 0.22,
    "hours_per_week": 0.35,
    "capital_gain": 0.00015,
    "sex=Male": 3.0,
    "marital_status=Married": 2.5,
}
NOISE_SD_LINEAR = 6.0
COEF_LOGISTIC = {
    "intercept": -12.0,
    "years_education": 0.38,
    "age": 0.045,
    "hours_per_week": 0.055,
    "capital_gain": 0.00025,
    "sex=Male": 0.9,
    "marital_status=Married": 1.3,
}

# ---- public-knowledge schema constants (not read from data) ----
SEX = ["Female", "Male"]
RACE = ["White", "Black", "Hispanic", "Asian", "Other"]
MARITAL = ["Never-married", "Married", "Divorced", "Separated", "Widowed"]
EDUCATION = ["Less-than-HS", "HS-grad", "Some-college", "Associate", "Bachelor", "Master", "Doctorate"]
OCCUPATION = [
    "Management",
    "Professional",
    "Sales",
    "Office",
    "Service",
    "Construction",
    "Production",
    "Transport",
    "Farming",
    "Military",
]
WORKCLASS = ["Private", "Self-employed", "Government", "Without-pay"]
AGE_EDGES = [16, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 80, 90]  # 13 bins, [16, 90]
YEARS_EDUCATION = list(range(8, 21))  # 13 levels, 8..20
HOURS_EDGES = [0, 10, 20, 30, 35, 40, 45, 50, 60, 70, 80, 100]  # 11 bins, [0, 100]
GAIN_EDGES = [0, 1, 1000, 2500, 5000, 7500, 10000, 15000, 25000, 50000, 100000]  # 10 bins
GAIN_VALUES = [0, 500, 1750, 3750, 6250, 8750, 12500, 20000, 37500, 75000]  # "none" bin -> 0
SCORE_EDGES = [0, 10, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 80, 90, 100, 120]  # 16 bins
HIGH_INCOME = [0, 1]


def make_schema():
    from ddssp.data import Column, Schema

    return Schema(
        [
            Column.binned("age", AGE_EDGES),
            Column.categorical("sex", SEX),
            Column.categorical("race", RACE),
            Column.categorical("marital_status", MARITAL),
            Column.categorical("education", EDUCATION),
            Column.levels("years_education", YEARS_EDUCATION),
            Column.categorical("occupation", OCCUPATION),
            Column.categorical("workclass", WORKCLASS),
            Column.binned("hours_per_week", HOURS_EDGES),
            Column.binned("capital_gain", GAIN_EDGES, values=GAIN_VALUES),
            Column.binned("income_score", SCORE_EDGES),
            Column.levels("high_income", HIGH_INCOME),
        ]
    )


def _pick(rng, labels, p, n=None):
    p = np.asarray(p, dtype=float)
    return rng.choice(np.asarray(labels, dtype=object), size=n, p=p / p.sum())


def make_table(rows: int = ROWS, seed: int = SEED) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = rows
    age = np.clip(np.round(17 + rng.gamma(2.3, 9.5, n)), 17, 90).astype(int)
    sex = _pick(rng, SEX, [0.48, 0.52], n)
    race = _pick(rng, RACE, [0.62, 0.12, 0.17, 0.06, 0.03], n)

    edu_p = np.array([0.10, 0.29, 0.21, 0.09, 0.20, 0.08, 0.03])
    edu_idx = np.empty(n, dtype=int)
    for i in range(n):
        p = edu_p.copy()
        if age[i] < 22:  # too young for graduate degrees
            p[4:] *= [0.3, 0.0, 0.0]
        edu_idx[i] = rng.choice(len(EDUCATION), p=p / p.sum())
    education = np.asarray(EDUCATION, dtype=object)[edu_idx]
    base_years = np.array([10, 12, 13, 14, 16, 18, 20])[edu_idx]
    jitter = np.where(edu_idx == 0, rng.integers(-2, 2, n), 0) + np.where(edu_idx == 2, rng.integers(0, 2, n), 0)
    years_education = np.clip(base_years + jitter, 8, 20)

    married_p = np.clip(0.05 + 0.55 * (1 - np.exp(-(age - 18) / 10.0)), 0.03, 0.55)
    never_p = 0.03 + 0.95 * np.exp(-(age - 17) / 11.0)
    divorced_p = 0.13 * (1 - np.exp(-np.maximum(age - 20, 0) / 12.0))
    widowed_p = np.where(age < 50, 0.002, 0.01 + 0.005 * (age - 50))
    mp = np.stack([never_p, married_p, divorced_p, np.full(n, 0.025), widowed_p], axis=1)
    mp /= mp.sum(axis=1, keepdims=True)
    u = rng.random(n)[:, None]
    marital = np.asarray(MARITAL, dtype=object)[(u > np.cumsum(mp, axis=1)).sum(axis=1)]

    occ = np.empty(n, dtype=object)
    for i in range(n):
        e = edu_idx[i]
        w = np.array(
            [
                1.0 + 0.8 * e,
                0.5 + 1.5 * e,
                1.2,
                1.5,
                2.0 - 0.25 * e,
                1.2 - 0.15 * e,
                1.4 - 0.18 * e,
                1.0 - 0.12 * e,
                0.35,
                0.1,
            ]
        )
        occ[i] = _pick(rng, OCCUPATION, np.clip(w, 0.05, None))
    workclass = _pick(rng, WORKCLASS, [0.72, 0.11, 0.15, 0.02], n)

    hours = np.where(rng.random(n) < 0.45, 40, np.round(rng.normal(40, 11, n)))
    hours = np.where(workclass == "Without-pay", np.round(rng.uniform(1, 30, n)), hours)
    hours = np.clip(hours, 1, 99).astype(int)

    has_gain = rng.random(n) < 0.09
    gain = np.where(has_gain, np.round(np.exp(rng.normal(8.4, 1.0, n))), 0)
    gain = np.where(has_gain & (rng.random(n) < 0.005), 99999, gain)  # top-coded, as in real data
    gain = np.clip(gain, 0, 99999).astype(int)

    male = (sex == "Male").astype(float)
    married = (marital == "Married").astype(float)
    c = COEF_LINEAR
    score = (
        c["intercept"]
        + c["years_education"] * years_education
        + c["age"] * age
        + c["hours_per_week"] * hours
        + c["capital_gain"] * gain
        + c["sex=Male"] * male
        + c["marital_status=Married"] * married
        + rng.normal(0, NOISE_SD_LINEAR, n)
    )
    score = np.clip(np.round(score, 1), 0, 120)

    b = COEF_LOGISTIC
    logit = (
        b["intercept"]
        + b["years_education"] * years_education
        + b["age"] * age
        + b["hours_per_week"] * hours
        + b["capital_gain"] * gain
        + b["sex=Male"] * male
        + b["marital_status=Married"] * married
    )
    high = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)

    return pd.DataFrame(
        {
            "age": age,
            "sex": sex,
            "race": race,
            "marital_status": marital,
            "education": education,
            "years_education": years_education,
            "occupation": occ,
            "workclass": workclass,
            "hours_per_week": hours,
            "capital_gain": gain,
            "income_score": score,
            "high_income": high,
        }
    )


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--outdir", default=str(here))
    ap.add_argument("--force", action="store_true", help="replace existing files")
    args = ap.parse_args(argv)

    from ddssp.data.fileio import atomic_write, check_output_path

    outdir = Path(args.outdir)
    csv_path = check_output_path(outdir / "census.csv", force=args.force)
    schema_path = check_output_path(outdir / "census.schema.json", force=args.force)
    df = make_table(args.rows, args.seed)
    schema = make_schema()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any clipping would be a bug in the constants above
        codes = schema.encode(df)
    assert (schema.encode(schema.decode(codes)) == codes).all().all()
    with atomic_write(csv_path, "w", newline="", encoding="utf-8") as fh:
        df.to_csv(fh, index=False)
    schema.save(schema_path, force=args.force)
    for path in (csv_path, schema_path):
        path.chmod(0o644)  # example files are meant to be read by anyone
    print(
        f"wrote {csv_path} ({len(df)} rows, {csv_path.stat().st_size / 1e6:.2f} MB) and {schema_path}; "
        f"high_income rate {df['high_income'].mean():.3f}; "
        f"domain {dict(schema.domain)}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    from ddssp.errors import DDSSPError

    try:
        sys.exit(main())
    except DDSSPError as exc:
        print(f"make_census: error: {exc}", file=sys.stderr)
        sys.exit(1)
