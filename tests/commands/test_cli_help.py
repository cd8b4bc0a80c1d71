"""The CLI's help teaches: grouped options, required ones marked, examples, testing-only options
hidden from ``--help``, and a mistyped option answered with the sub-command's usage and a suggestion."""

from __future__ import annotations

import pytest

from ddssp.cli import COMMANDS, build_parser, main, subcommand_parser


def _run(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_typo_prints_the_subcommand_usage_and_a_suggestion(capsys, tmp_path):
    code, out, err = _run(capsys, ["release", str(tmp_path / "x.csv"), "--esp", "1"])
    assert code == 2 and out == ""
    assert err.startswith("usage: ddssp release ")
    assert "unrecognized arguments: --esp; did you mean --eps?" in err
    assert not (tmp_path / "x.release").exists()


def test_typo_of_a_required_option_is_reported_as_the_typo(capsys, tmp_path):
    code, _, err = _run(capsys, ["fit", str(tmp_path / "r.release"), "--targt", "y"])
    assert code == 2
    assert err.startswith("usage: ddssp fit ")
    assert "did you mean --target?" in err and "required" not in err


def test_mistyped_command_gets_a_suggestion(capsys):
    code, _, err = _run(capsys, ["relase", "x.csv", "--eps", "1"])
    assert code == 2 and err.startswith("usage: ddssp ")
    assert "unknown command 'relase'; did you mean release?" in err
    code, _, err = _run(capsys, ["zzz"])
    assert code == 2 and "(choose from release, " in err


def test_unknown_option_without_a_close_match_has_no_suggestion(capsys, tmp_path):
    code, _, err = _run(capsys, ["fit", str(tmp_path / "r.release"), "--target", "y", "--zzzzzz"])
    assert code == 2
    assert err.startswith("usage: ddssp fit ")
    assert "unrecognized arguments: --zzzzzz" in err and "did you mean" not in err


def test_eps_is_shown_required_in_the_release_usage(capsys):
    code, out, _ = _run(capsys, ["release", "--help"])
    assert code == 0
    usage = out.split("\n\n")[0]
    assert " --eps EPS " in usage and "[--eps EPS]" not in usage
    assert "[--delta DELTA]" in usage  # the marking is per option, not for all


def test_missing_eps_still_gets_the_teaching_message(capsys, tmp_path):
    data = tmp_path / "t.csv"
    data.write_text("a,b\n1,2\n")
    assert main(["release", str(data)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ddssp: error: give the privacy budget")


def test_testing_options_hidden_from_help_and_listed_by_help_all(capsys):
    _, out, _ = _run(capsys, ["release", "--help"])
    assert "--insecure-seed" not in out and "testing only" not in out
    assert "--help-all" in out
    code, full, _ = _run(capsys, ["release", "--help-all"])
    assert code == 0
    assert "testing only (NOT for releases you publish):\n  --insecure-seed N" in full
    assert "NOT PRIVATE" in full
    # hidden from help, still an option
    args = build_parser().parse_args(["release", "d.csv", "--eps", "1", "--insecure-seed", "7"])
    assert args.insecure_seed == 7


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_every_command_shows_examples_that_parse(name):
    parser = build_parser()
    text = subcommand_parser(parser, name).format_help()
    assert "\nexamples:\n" in text
    examples = text.split("\nexamples:\n", 1)[1].strip().splitlines()
    assert examples
    for line in examples:
        argv = line.split("#", 1)[0].split()
        assert argv[:2] == ["ddssp", name]
        parser.parse_args([a.strip("'") for a in argv[1:]])  # each example is a valid command line


def test_release_options_are_grouped_in_order():
    text = subcommand_parser(build_parser(), "release").format_help()
    titles = ["input and reading:", "privacy:", "discovery (", "AIM (", "output:", "examples:"]
    pos = [text.index("\n" + t) for t in titles]
    assert pos == sorted(pos)
    privacy = text[text.index("\nprivacy:") : text.index("\ndiscovery (")]
    assert "--eps EPS" in privacy and "--schema" in privacy
