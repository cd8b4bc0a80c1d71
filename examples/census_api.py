"""The Python API end to end on the census example: release, fit, synthetic rows.

    python examples/census_api.py [--outdir census-example] [--eps 1] [--rows N] [--force]

Runs from any directory once ddssp is installed (``pip install ddssp``): the table and its schema
are read from beside this file. Writes OUTDIR/census.release and OUTDIR/census.synthetic.csv;
running again refuses to replace them unless --force is given. --rows uses the first N rows (a
quicker run). The release is (eps, 1e-9)-DP; everything after it is post-processing of the release
and costs no privacy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", default="census-example", help="directory for the outputs (default census-example)")
    ap.add_argument("--eps", type=float, default=1.0, help="privacy budget of the release (default 1)")
    ap.add_argument("--rows", type=int, default=None, help="use only the first ROWS rows of the table")
    ap.add_argument("--force", action="store_true", help="replace outputs of an earlier run")
    args = ap.parse_args(argv)

    import pandas as pd

    import ddssp
    from ddssp.data import load_schema
    from ddssp.errors import DDSSPError

    out = Path(args.outdir)
    release_path, synth_path = out / "census.release", out / "census.synthetic.csv"
    existing = [p for p in (release_path, synth_path) if p.exists()]
    if existing and not args.force:
        print(f"census_api: {existing[0]} exists; add --force to replace it", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)

    data = pd.read_csv(HERE / "census.csv", nrows=args.rows)
    schema = load_schema(HERE / "census.schema.json")  # declared, public: costs nothing
    try:
        rel = ddssp.release(data, schema, eps=args.eps, delta=1e-9)
    except DDSSPError as exc:
        print(f"census_api: error: {exc}", file=sys.stderr)
        return 1
    rel.save(release_path, force=args.force)
    print(f"released {len(rel.schema.names)} columns at eps={args.eps:g}: {release_path}")

    # anyone holding only the release file can do the rest
    rel = ddssp.Release.load(release_path)
    from ddssp.estimators.ddssp import DDSSPLinearRegression

    est = DDSSPLinearRegression(features=["years_education", "age", "hours_per_week", "sex"])
    est.fit(rel, target="income_score")
    print("income_score regressed on four columns (all on the [-1, 1] scale):")
    for name, coef in zip(["intercept", *est.feature_names_in_], [est.intercept_, *est.coef_]):
        print(f"  {name:16s} {coef:+.4f}")

    rows = rel.synthesize(1000, seed=1)
    rows.to_csv(synth_path, index=False)
    print(f"wrote {len(rows)} synthetic rows: {synth_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
