"""A leading UTF-8 byte-order mark (Notepad's, PowerShell 5's "UTF-8") is no part of an input."""

from __future__ import annotations

from pathlib import Path

from edgeprof.analysis.budgets import load_budget_file
from edgeprof.storage import read_capped, read_json
from edgeprof.sweeps.envtemplate import read_assignments
from edgeprof.sweeps.labels import model_names

BOM = b"\xef\xbb\xbf"


def test_read_capped_drops_a_leading_bom_only(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(BOM + "a\ufeffé".encode())
    assert read_capped(path) == "a\ufeffé"  # one inside the text is the text's


def test_a_model_files_first_name_has_no_bom(tmp_path: Path) -> None:
    path = tmp_path / "models.txt"
    path.write_bytes(BOM + "aé\r\n\r\n# comment\r\nb c\r\n".encode())
    assert model_names(None, path) == ["aé", "b c"]


def test_an_env_template_with_a_bom_reads_its_first_key(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    path = tmp_path / "bom.template"
    path.write_bytes(BOM + b"DIR=app\nSCRIPT=main.py\n")
    values, warnings = read_assignments(path)
    assert {k: v for k, (v, _line) in values.items()} == {"DIR": "app", "SCRIPT": "main.py"}
    assert warnings == []


def test_a_json_file_with_a_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(BOM + b'{"a": 1}')
    assert read_json(path) == {"a": 1}


def test_a_budget_file_with_a_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "budgets.yml"
    path.write_bytes(BOM + b"default:\n  wall: 10s\n")
    plain = tmp_path / "plain.yml"
    plain.write_bytes(b"default:\n  wall: 10s\n")
    assert load_budget_file(path).default == load_budget_file(plain).default
    assert load_budget_file(path).default
