"""The notebook path in a few lines: a DataFrame to a release, synthetic rows, a regression with
intervals, predictions, and the data holder's quality report.

    python examples/notebook.py                # from any directory, after `pip install .`

Run it cell by cell in Jupyter to see the progress bar and the report's table.
"""

import argparse
from pathlib import Path

import pandas as pd

import ddssp
from ddssp.estimators import IntervalOptions

HERE = Path(__file__).resolve().parent

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--rows", type=int, default=None, help="use the first ROWS rows of the example table")
parser.add_argument("--boot", type=int, default=20, help="bootstrap replicates for the intervals")
args = parser.parse_args()

df = pd.read_csv(HERE / "census.csv", nrows=args.rows)

# the data holder: one call, schema discovered under DP inside the budget. The 0/1 column that
# analysts will fit a logistic regression on is declared categorical, so that it is released as its
# two labels: discovered as a number, noise can (rarely) give it an empty third level or bin
rel = ddssp.release(df, eps=1.0, seed=0, discovery=ddssp.DiscoveryOptions(categorical=["high_income"]))
print(rel)

# anyone with the release: synthetic rows, regressions (post-processing, no privacy cost)
print(rel.sample(5, seed=1).to_string(index=False))
clf = ddssp.DDSSPLogisticRegression(ci=0.95, intervals=IntervalOptions(boot=args.boot, seed=1))
clf.fit(rel, target="high_income")
table = clf.coef_table()
print(table[["coef", "unit", "level_share", "ci_low", "ci_high", "measured"]].round(4).head(8).to_string())
print("P(high_income) for the first rows:", clf.predict_proba(df.head(3))[:, 1].round(3))
print("accuracy on the data:", round(clf.score(df, df["high_income"]), 3))

# the data holder again, before publishing: how far is the release from the data? (not for publication)
report = ddssp.evaluate(rel, df)
print(report)
print(report.pairs.head(3).to_string(index=False))
