"""Damaged run files: a damaged step line is skipped with a warning naming file:line and the
count; a damaged summary raises an error naming its file (also through ``smcplan report``)."""

from __future__ import annotations

import json

import pytest

from smcplan.cli import main
from smcplan.eval.records import DamagedLinesWarning, RunFileError, read_jsonl, read_summary


def test_damaged_lines_are_skipped_with_one_warning_naming_file_line_and_count(tmp_path):
    path = tmp_path / "e.steps.jsonl"
    lines = [b'{"t": 0}', b'{"t": 1', b"[1, 2]", b"\xff\xfe garbage", b"", b'{"t": 4}', b'"text"']
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.warns(DamagedLinesWarning) as caught:
        records = list(read_jsonl(path))
    assert [r["t"] for r in records] == [0, 4]
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("skipped 4 damaged lines")
    for lineno in (2, 3, 4, 7):
        assert f"{path}:{lineno}" in message


def test_an_intact_file_gives_no_warning(tmp_path, recwarn):
    path = tmp_path / "ok.jsonl"
    path.write_text('{"t": 0}\n{"t": 1}\n')
    assert [r["t"] for r in read_jsonl(path)] == [0, 1]
    assert not [w for w in recwarn if issubclass(w.category, DamagedLinesWarning)]


@pytest.mark.parametrize(
    "content",
    [
        b'{"episode": "a", "stats": {',
        b"[1, 2]",
        b"\x00\xff",
        b'{"episode": "a"}',
        b'{"episode": "a", "stats": {"env": "x"}}',
    ],
)
def test_a_damaged_summary_names_its_file(tmp_path, content):
    path = tmp_path / "a.json"
    path.write_bytes(content)
    with pytest.raises(RunFileError, match=rf"^{path}: "):
        read_summary(path)


def test_report_on_a_run_with_a_damaged_summary_is_one_line_naming_it(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "eval",
                "--env",
                "toy:tiger",
                "--agent",
                "random",
                "--seeds",
                "0-1",
                "--max-steps",
                "3",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    summary = sorted((out / "episodes").glob("*.json"))[0]
    summary.write_text(json.dumps([1, 2]))
    assert (
        main(["report", str(out), "--out", str(tmp_path / "rep"), "--no-plots", "--no-viewer"]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(summary) in err[0] and "not an episode summary" in err[0]


def test_report_warns_in_one_line_about_damaged_step_lines(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "eval",
                "--env",
                "toy:tiger",
                "--agent",
                "random",
                "--seeds",
                "0",
                "--max-steps",
                "3",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    steps = next((out / "episodes").glob("*.steps.jsonl"))
    steps.write_bytes(steps.read_bytes() + b'{"torn": \n')
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "rep"), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert f"smcplan: warning: skipped 1 damaged line (not a JSON object): {steps}:" in err
