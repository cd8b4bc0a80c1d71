from ddssp.commands import comma_list, input_group, output_group, warn_stamp
from ddssp.commands.fit import add_model_arguments

HELP = "predict a target for the rows of a table from a DD-SSP regression fitted on a release"

DESCRIPTION = """Fits the same DD-SSP regression as `ddssp fit` (from the release alone: post-processing, no
privacy cost) and applies it to the rows of DATA, a table in the data's own values (labels, numbers;
the columns the model uses must be present, others are carried along). Writes DATA's columns plus
`prediction` (linear: in the target's units; logistic: the predicted label, `not LEVEL` for the rest
when --positive LEVEL fits one level against the others) and, for a logistic model, `probability`
(of the positive class: the target's second level, or the level --positive names)."""

EXAMPLES = """
    ddssp predict adult.release new_people.csv --target income --model logistic -o predictions.csv
    ddssp predict adult.release new_people.csv --target education --model logistic --positive Bachelors -o p.csv
"""


def add_arguments(p) -> None:
    """Add the options of ``ddssp predict`` to its parser, in the shared option groups.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    p.add_argument("release", help="release file written by `ddssp release`")
    p.add_argument("data", metavar="DATA", help="table of rows to predict (.csv or .parquet)")
    add_model_arguments(p)
    output_group(p).add_argument("-o", "--output", required=True, metavar="PREDICTIONS.csv", help="CSV file to write")
    output_group(p).add_argument("--force", action="store_true", help="replace an existing output file")
    input_group(p).add_argument(
        "--na-values",
        type=comma_list,
        default=None,
        metavar="X,Y",
        help="cell values that mean missing, besides empty cells (default: those the release records)",
    )


def run(args) -> int:
    """Run ``ddssp predict``: fit the DD-SSP regression from a release and write predictions for a table of rows.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    int
        The exit status, 0 (failures raise).

    Raises
    ------
    DDSSPError
        For bad input or a failed step: the CLI prints it as one line and exits non-zero.
    """
    import numpy as np

    from ddssp.commands.fit import fit_estimator
    from ddssp.data.fileio import atomic_write, check_output_path
    from ddssp.data.tables import read_table
    from ddssp.errors import DDSSPError
    from ddssp.releasefile import Release

    out = check_output_path(args.output, force=args.force, inputs=[args.release, args.data])
    rel = Release.load(args.release)
    warn_stamp(rel, args.release)
    reading = rel.reading
    na = reading["na_values"] if args.na_values is None else args.na_values
    delim = reading["delimiter"]
    df = read_table(args.data, delimiter="\t" if delim == "\\t" else delim, na_values=na, encoding=reading["encoding"])
    args.ci = None
    est = fit_estimator(rel, args)
    feats = list(est.encoding_.features)
    absent = [c for c in feats if c not in set(map(str, df.columns))]
    if absent:
        raise DDSSPError(
            f"DATA lacks the model's feature column(s) {absent}; add them, or fit on fewer with --features"
        )
    frame = df.copy()
    frame.columns = [str(c) for c in frame.columns]
    X = frame[feats]
    if args.model == "logistic":
        proba = est.predict_proba(X)[:, 1]
        labels = np.asarray(est.target_labels_, dtype=object)
        frame["prediction"] = labels[(proba > 0.5).astype(int)]
        frame["probability"] = proba
    else:
        frame["prediction"] = est.predict(X)
    with atomic_write(out, "w", newline="") as fh:
        frame.to_csv(fh, index=False)
    what = f"{args.model}, probability of {est.target_} = {est.positive_!r}" if args.model == "logistic" else args.model
    print(f"wrote {len(frame)} predictions of {est.target_!r} ({what}) to {out}")
    return 0
