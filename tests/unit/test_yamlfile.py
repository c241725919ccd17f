from __future__ import annotations

from pathlib import Path

import pytest

from n8n_lockkit.errors import EnvError
from n8n_lockkit.workspace.yamlfile import YamlDocument

STYLES = {
    "init-style": (
        '# comment on top\nname: dev   # trailing comment\nn8n:\n  url: "http://x:5678"\n'
        "  apiKeyEnv: N8N_API_KEY\ncredentials:\n  redis: {id: \"\", name: ''}\n"
        "workflows: {}\nlockScopes: []\n"
    ),
    "four-space-indent": "name: dev\nlockScopes:\n    - a\n    - 'b'\nn8n:\n    url: http://x\n",
    "dash-at-key-column": "name: dev\nlockScopes:\n- a\nworkflows:\n  x: {id: '1', name: \"X\"}\n",
}


@pytest.mark.parametrize("text", STYLES.values(), ids=list(STYLES))
def test_untouched_document_dumps_to_the_same_bytes(text: str) -> None:
    assert YamlDocument.parse(Path("e.yml"), text).dumps() == text


@pytest.mark.parametrize("text", STYLES.values(), ids=list(STYLES))
def test_an_edit_changes_only_what_it_edits(text: str) -> None:
    document = YamlDocument.parse(Path("e.yml"), text)
    document.set(("extra",), "value")
    dumped = document.dumps()
    assert dumped == text + "extra: value\n"


def test_appending_to_a_sequence_keeps_its_indentation() -> None:
    document = YamlDocument.parse(Path("e.yml"), STYLES["four-space-indent"])
    document.get(("lockScopes",)).append("c")
    assert "    - 'b'\n    - c\n" in document.dumps()


def test_malformed_yaml_names_the_file_and_line() -> None:
    with pytest.raises(EnvError, match=r"e\.yml:3: not valid YAML") as caught:
        YamlDocument.parse(Path("e.yml"), "name: dev\nn8n:\n  url: a: b\n")
    assert caught.value.hint


def test_a_list_at_the_top_level_is_refused() -> None:
    with pytest.raises(EnvError, match="must be a mapping"):
        YamlDocument.parse(Path("e.yml"), "- a\n- b\n")


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EnvError, match="file not found"):
        YamlDocument.load(tmp_path / "missing.yml")
