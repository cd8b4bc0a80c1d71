from ddssp.commands import comma_list, warn_stamp

HELP = "run AIM on a sensitive table and write a DP release file (the only command that reads the data)"
DESCRIPTION = """Measure noisy marginals of DATA with AIM under (eps, delta)-DP and write one release file
holding the schema, the ledger, the noisy measurements and the fitted model. Everything else
(fit, synth, inspect) works from that file alone. The schema (levels, bins, bounds) must come from
public knowledge: it is published as is and is not protected by the privacy budget."""


def add_arguments(p) -> None:
    p.add_argument("data", metavar="DATA", help="sensitive table (.csv or .parquet)")
    p.add_argument("--eps", type=float, required=True, help="privacy parameter epsilon (> 0)")
    p.add_argument("--delta", type=float, default=None, help="privacy parameter delta, in (0, 1) (default 1e-9)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--schema", help="schema JSON (from `ddssp schema`, reviewed) or a domain file")
    src.add_argument("--domain", help='domain file {"column": levels}: DATA holds integer codes 0..levels-1')
    p.add_argument("--categorical", type=comma_list, help="with a domain file: the categorical columns (a,b,...)")
    p.add_argument("--target", help="regression target column (recorded; needed by --workload target)")
    p.add_argument("--workload", default="all-pairs",
                   help="all-pairs (default), target (pairs with --target), or a JSON file of cliques")
    p.add_argument("--max-cells", type=int, help="drop workload marginals with more cells than this")
    p.add_argument("--max-model-size", type=float, default=80.0, help="model size limit in MB (default 80)")
    p.add_argument("--rounds", type=int, help="AIM rounds (default 16 x number of columns)")
    p.add_argument("--iters", type=int, help="estimation iterations per round (default: adaptive)")
    p.add_argument("--engine", choices=["numpy", "mbi"], default="numpy",
                   help="estimation engine: numpy mirror descent (default, nothing compiled) or mbi's "
                        "JAX MirrorDescent (the slow reference path)")
    p.add_argument("--seed", type=int,
                   help="seed for what is not DP noise (default: fresh OS entropy); the noise itself always "
                        "comes from OpenDP's secure samplers and no seed reaches it")
    p.add_argument("--insecure-seed", type=int, metavar="N",
                   help="TESTING ONLY: draw the DP noise from a numpy generator seeded with N. The release is "
                        "then NOT PRIVATE (anyone with N can subtract the noise) and is stamped so")
    p.add_argument("--sign-key", metavar="KEY.pem",
                   help="sign the release with this Ed25519 private key (PEM; `openssl genpkey -algorithm ed25519 "
                        "-out key.pem`); readers check it with `ddssp verify --public-key`")
    p.add_argument("-o", "--output", required=True, help="release file to write")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")


def run(args) -> int:
    import sys
    import time

    from ddssp.data.tables import read_table
    from ddssp.data.fileio import check_output_path
    from ddssp.dp import check_delta, check_eps, rho_from_eps_delta
    from ddssp.release import DEFAULT_DELTA, release
    from ddssp.data import load_schema

    t0 = time.perf_counter()
    eps = check_eps(args.eps)
    delta_given = args.delta is not None
    delta = check_delta(args.delta if delta_given else DEFAULT_DELTA)
    if not delta_given and not args.quiet:
        print(f"ddssp: delta not given; using delta = {delta:g}", file=sys.stderr)
    out = check_output_path(args.output, force=args.force, inputs=[args.data, args.schema or args.domain])
    sign_key = None
    if args.sign_key:
        from ddssp.release import load_signing_key

        sign_key = load_signing_key(args.sign_key)  # a bad key fails before the data is read
    schema = load_schema(args.schema or args.domain, categorical=args.categorical)
    df = read_table(args.data)
    rho = rho_from_eps_delta(eps, delta)

    bar = None
    if not args.quiet:
        from tqdm.auto import tqdm

        # disable=None: no bar when stderr is not a terminal (a redirected log gets no \r lines)
        bar = tqdm(total=100, desc="AIM", unit="% budget", file=sys.stderr, disable=None,
                   bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}")

    def progress(p) -> None:
        if bar is None:
            return
        done = min(100.0, 100.0 * p.rho_spent / p.rho_budget)
        bar.update(done - bar.n)
        clique = ",".join(p.clique) if p.clique else "one-way"
        bar.set_postfix_str(f"round {p.round}/{p.max_rounds} measured {clique} sigma={p.sigma:.3g}")

    try:
        rel = release(df, schema, eps=eps, delta=delta, target=args.target, workload=args.workload,
                      max_cells=args.max_cells, max_model_size=args.max_model_size, seed=args.seed,
                      rounds=args.rounds, iters=args.iters, callback=progress, engine=args.engine,
                      insecure_seed=args.insecure_seed)
    finally:
        if bar is not None:
            bar.close()
    rel.save(out, force=args.force, inputs=[args.data], sign_key=sign_key)
    warn_stamp(rel, out)
    if not args.quiet:
        s = rel.summary()
        n_meas = sum(c["measurements"] for c in s["cliques"])
        t = rel.local_info.get("timings", {})
        if t:  # the data holder's terminal only: timings grow with the data and are never saved
            print("Timings (not saved in the release): "
                  + ", ".join(f"{k} {v:.2f} s" for k, v in t.items() if isinstance(v, (int, float))),
                  file=sys.stderr)
        print(
            f"Released {len(df)} rows x {len(schema.names)} columns: {n_meas} noisy measurements of "
            f"{len(s['cliques'])} marginals in {s['rounds']} rounds, model of "
            f"{len(s['model_cliques'])} cliques. Privacy: eps={eps:g}, delta={delta:g} "
            f"(rho budget {rho:.6g}, spent {rel.rho_spent:.6g}). Wall time {time.perf_counter() - t0:.1f} s. "
            f"Wrote {out}; inspect it with `ddssp inspect {out}`."
        )
    return 0
