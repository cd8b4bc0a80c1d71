HELP = "run a benchmark spec (workloads/*.toml): methods x settings x trials -> table and plot"


def _floats(text: str) -> list[float]:
    import argparse

    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def add_arguments(p) -> None:
    p.add_argument("spec", help="benchmark spec (TOML), e.g. workloads/adult-linear.toml")
    p.add_argument("-o", "--outdir",
                   help="directory for results.csv, summary.csv, plot.png (default: bench-out/<spec stem>)")
    p.add_argument("--data-dir", help="directory holding the spec's data files (e.g. ../shared/data)")
    p.add_argument("--trials", type=int, help="override the spec's number of trials")
    p.add_argument("--eps", type=_floats, help="override the spec's eps grid, e.g. 0.1,1")
    p.add_argument("--methods", type=lambda s: [m.strip() for m in s.split(",") if m.strip()],
                   help="override the spec's methods, comma-separated")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--force", action="store_true", help="replace existing results in OUTDIR")
    p.add_argument("--resume", action="store_true",
                   help="continue a stopped run in OUTDIR (finished cells are kept; same seeds, same results); "
                        "with --trials N it finishes with N trials (fewer or more than the stopped run's)")


def run(args) -> int:
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
