"""A small raw table for the discovery tests (generated; no dependence on ../shared).

Columns like a raw survey extract: whole-number age, a float income with many exact zeros, hours
with a heavy point mass at 40, years of education 8..20 (few whole values), a text sector with a
missing marker and rare labels, and a binary text target. Nothing here is real data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SECTORS = ["Private", "Public", "Self-employed", "Nonprofit"]


def make_raw_table(rows: int = 4000, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = np.clip(np.round(rng.gamma(9.0, 4.5, rows) + 17), 18, 90).astype(int)
    educ = rng.integers(8, 21, rows)
    hours = np.where(rng.random(rows) < 0.5, 40, np.clip(np.round(rng.normal(38, 12, rows)), 1, 99)).astype(int)
    gain = np.where(rng.random(rows) < 0.8, 0.0, np.round(rng.lognormal(8.5, 1.0, rows), 2))
    sector = rng.choice(SECTORS + ["?"], size=rows, p=[0.55, 0.2, 0.12, 0.08, 0.05])
    score = -9 + 0.35 * educ + 0.04 * age + 0.04 * hours + 0.0001 * gain + rng.logistic(size=rows)
    target = np.where(score > 0, ">50K", "<=50K")
    return pd.DataFrame(
        {
            "age": age.astype(str),
            "years_education": educ.astype(str),
            "hours": hours.astype(str),
            "gain": [f"{g:g}" for g in gain],
            "sector": sector,
            "income": target,
        }
    )
