"""README.md stays true: the settings table matches Settings, and CI can find the test command."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_settings_table_matches_config() -> None:
    spec = importlib.util.spec_from_file_location("settings_table", ROOT / "scripts" / "settings_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    block = re.search(r"<!-- settings-table:start -->\n(.*?)\n<!-- settings-table:end -->", README, re.S)
    assert block is not None, "README.md lacks the settings-table markers"
    assert block.group(1).strip() == module.table(), "regenerate with: python scripts/settings_table.py"


def test_readme_has_one_test_command() -> None:
    # .ci/run takes the first fenced block after the marker; keep exactly one marker.
    assert README.count("<!-- test-command -->") == 1
    after = README.split("<!-- test-command -->", 1)[1]
    block = re.match(r"\s*```\w*\n(.+?)\n```", after, re.S)
    assert block is not None and block.group(1).strip()
