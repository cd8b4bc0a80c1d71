"""read_table: CSV / Parquet input and every unreadable-table case."""

from __future__ import annotations

import pandas as pd
import pytest

from ddssp.data.tables import UnnamedColumnWarning, read_table
from ddssp.errors import DataError


def write(path, text: str | bytes):
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_csv_cells_are_strings_and_only_empty_is_missing(tmp_path):
    p = write(tmp_path / "t.csv", "a,b,c\n1,NA,x\n02, null,\n")
    df = read_table(p)
    assert list(df.columns) == ["a", "b", "c"]
    assert df["a"].tolist() == ["1", "02"]  # text: leading zeros kept
    assert df["b"].tolist() == ["NA", "null"]  # not turned into NaN; leading space skipped
    assert df["c"].isna().tolist() == [False, True]


def test_utf8_bom_and_quoted_fields(tmp_path):
    p = write(tmp_path / "t.csv", '\ufeffname,v\n"Smith, J",1\n')
    df = read_table(p)
    assert list(df.columns) == ["name", "v"]
    assert df["name"].tolist() == ["Smith, J"]


def test_parquet_round_trip(tmp_path):
    src = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    p = tmp_path / "t.parquet"
    src.to_parquet(p)
    pd.testing.assert_frame_equal(read_table(p), src)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="not found"):
        read_table(tmp_path / "nope.csv")


def test_directory(tmp_path):
    with pytest.raises(DataError, match="directory"):
        read_table(tmp_path)


@pytest.mark.parametrize(
    "content, match",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "not a CSV"),
        (b"PK\x03\x04\x14\x00\x00\x00\x08\x00", "not a CSV"),
        (b"a,b\n\xff\xfe\xfa,1\n", "not a CSV"),
        (b'{"a": 3,\n "b": 4}\n', "looks like JSON"),
    ],
)
def test_not_a_csv(tmp_path, content, match):
    p = write(tmp_path / "t.csv", content)
    with pytest.raises(DataError, match=match):
        read_table(p)


def test_header_starting_with_bracket_is_still_csv(tmp_path):
    df = read_table(write(tmp_path / "t.csv", "[id],b\n1,2\n"))
    assert list(df.columns) == ["[id]", "b"]


def test_json_file_by_suffix(tmp_path):
    p = write(tmp_path / "adult-domain.json", "a,b\n1,2\n")
    with pytest.raises(DataError, match="not a CSV"):
        read_table(p)


def test_corrupt_parquet(tmp_path):
    p = write(tmp_path / "t.parquet", "a,b\n1,2\n")
    with pytest.raises(DataError, match="Parquet"):
        read_table(p)


@pytest.mark.parametrize(
    "content, match",
    [
        ("", "empty"),
        ("\n\n  \n", "empty"),
        ("a,b,c\n", "no rows"),
        ("a,b\n\n\n", "no rows"),
    ],
)
def test_empty_table(tmp_path, content, match):
    p = write(tmp_path / "t.csv", content)
    with pytest.raises(DataError, match=match):
        read_table(p)


@pytest.mark.parametrize(
    "content",
    [
        "a,b\n1,2\n3\n",
        "a,b\n1,2\n3,4,5\n",
        "a,b\n1,2,3\n4,5,6\n",  # every row one field too many (pandas would make an index of it)
    ],
)
def test_ragged_rows(tmp_path, content):
    p = write(tmp_path / "t.csv", content)
    with pytest.raises(DataError, match=r"line \d+ has \d field"):
        read_table(p)


def test_duplicate_and_empty_column_names(tmp_path):
    with pytest.raises(DataError, match="duplicate"):
        read_table(write(tmp_path / "d.csv", "a,a\n1,2\n"))
    with pytest.warns(UnnamedColumnWarning, match="'column_2'"):
        df = read_table(write(tmp_path / "e.csv", "a,\n1,2\n"))
    assert list(df.columns) == ["a", "column_2"]
    with pytest.raises(DataError, match="'a', 'b'"):  # every repeated name in one error
        read_table(write(tmp_path / "f.csv", "a,a,b,b\n1,2,3,4\n"))


def test_select_columns_reports_every_unknown_name():
    from ddssp.data.tables import select_columns

    assert select_columns(["a", "b", "c"], ["c", "a"]) == ["c", "a"]
    assert select_columns(["a", "b", "c"], drop=["b"]) == ["a", "c"]
    with pytest.raises(DataError, match="'x', 'y'"):
        select_columns(["a", "b"], ["a", "x"], ["y"])
    with pytest.raises(DataError, match="no column"):
        select_columns(["a"], drop=["a"])


def test_census_example_reads(repo_root):
    df = read_table(repo_root / "examples" / "census.csv")
    assert df.shape == (24000, 12)
    assert all(pd.api.types.is_string_dtype(dt) for dt in df.dtypes)
