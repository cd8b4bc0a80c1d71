HELP = "check a release file: bounded load, ledger self-check and (optionally) its Ed25519 signature"

DESCRIPTION = """Load RELEASE with every check `inspect` and `fit` run (sizes capped before decompressing,
checksums, the ledger's self-check against the measurements and (eps, delta)) and, with --public-key,
check that the release was signed (`ddssp release --sign-key`) by the holder of that key. The self-check
catches inconsistent edits; only a signature tells a publisher's file from a consistent forgery."""


EXAMPLES = """
    ddssp verify adult.release --public-key publisher.pub.pem
"""


def add_arguments(p) -> None:
    """Add the options of ``ddssp verify`` to its parser, in the shared option groups.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    p.add_argument("release", metavar="RELEASE", help="release file written by `ddssp release`")
    p.add_argument(
        "--public-key",
        metavar="KEY.pub.pem",
        help="the publisher's Ed25519 public key (PEM); without it only the self-check runs",
    )


def run(args) -> int:
    """Run ``ddssp verify``: load a release (its self-check) and report its signature.

    The signature is checked against a trusted key when one is given.

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
    ReleaseFileError
        For a release that fails its checks or (with a key) its signature.
    """
    from ddssp.commands import warn_stamp
    from ddssp.data.safetext import terminal_text
    from ddssp.releasefile import Release

    # with a key, the signature is checked on manifest.json before anything else is parsed
    rel = Release.load(args.release, public_key=args.public_key or None)
    warn_stamp(rel, args.release)
    parts = [f"self-check OK (eps={rel.eps:g}, delta={rel.delta:g}, {len(rel.ledger.entries)} ledger entries)"]
    if args.public_key:
        fp = rel.verify(args.public_key)
        parts.append(f"signature OK ({fp}; it binds data set {rel.dataset_name!r}, created {rel.created})")
    elif rel.signature and rel.signature_valid is False:
        parts.append(
            "signature INVALID (it does not match even the key embedded in it: the file was "
            "modified after signing or the signature was copied from another file)"
        )
    elif rel.signature:
        parts.append(f"signed by {rel.signed_by} (not verified: pass --public-key)")
    else:
        parts.append("not signed")
    print(terminal_text(f"{args.release}: " + "; ".join(parts)))  # the data set's name comes from the file
    return 0
