from ddssp.commands import input_group, output_group, runs_group

HELP = "run a benchmark spec (workloads/*.toml): methods x settings x trials -> table and plot"


def _floats(text: str) -> list[float]:
    import argparse

    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


EXAMPLES = """
    ddssp bench workloads/adult-linear.toml --data-dir data/ --trials 2 --eps 0.3,1
"""


def add_arguments(p) -> None:
    """Add the options of ``ddssp bench`` to its parser, in the shared option groups.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    p.add_argument("spec", help="benchmark spec (TOML), e.g. workloads/adult-linear.toml")
    output_group(p).add_argument(
        "-o", "--outdir", help="directory for results.csv, summary.csv, plot.png (default: bench-out/<spec stem>)"
    )
    input_group(p).add_argument("--data-dir", help="directory holding the spec's data files (e.g. ../shared/data)")
    runs_group(p).add_argument("--trials", type=int, help="override the spec's number of trials")
    runs_group(p).add_argument("--eps", type=_floats, help="override the spec's eps grid, e.g. 0.1,1")
    runs_group(p).add_argument(
        "--methods",
        type=lambda s: [m.strip() for m in s.split(",") if m.strip()],
        help="override the spec's methods, comma-separated",
    )
    runs_group(p).add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    output_group(p).add_argument("--quiet", action="store_true", help="no progress output")
    output_group(p).add_argument("--force", action="store_true", help="replace existing results in OUTDIR")
    output_group(p).add_argument(
        "--resume",
        action="store_true",
        help="continue a stopped run in OUTDIR (finished cells are kept; same seeds, same results); "
        "with --trials N it finishes with N trials (fewer or more than the stopped run's)",
    )


def run(args) -> int:
    """Run ``ddssp bench``: the benchmark of a spec file (:func:`ddssp.bench.run_bench`).

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
    from ddssp.bench import run_bench

    run_bench(
        args.spec,
        args.outdir,
        data_dir=args.data_dir,
        trials=args.trials,
        eps=args.eps,
        methods=args.methods,
        seed=args.seed,
        quiet=args.quiet,
        force=args.force,
        resume=args.resume,
    )
    return 0
