"""ruamel round-trip mechanics: load, read and edit by key path, dump without losing bytes."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from n8n_lockkit.errors import EnvError

KeyPath = Sequence[str]


def _make_yaml(mapping_indent: int, sequence_indent: int, dash_offset: int) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a user's long lines
    yaml.indent(mapping=mapping_indent, sequence=sequence_indent, offset=dash_offset)
    return yaml


def _opens_block(content: str) -> bool:
    without_comment = re.sub(r"\s+#.*$", "", content)
    return without_comment.rstrip().endswith(":")


def _guess_indents(text: str) -> tuple[int, int, int]:
    """Mapping indent, sequence indent and dash offset as the file already uses them.

    ruamel does not keep per-line indentation, so we dump with the file's own style; the
    defaults (2, 4, 2) are what `n8nlock init` writes.
    """
    mapping: int | None = None
    offset: int | None = None
    previous_indent, previous_opens = 0, False
    for line in text.splitlines():
        content = line.lstrip(" ")
        if not content or content.startswith("#"):
            continue
        indent = len(line) - len(content)
        if previous_opens and content.startswith("- ") and offset is None:
            offset = indent - previous_indent
        elif previous_opens and indent > previous_indent and mapping is None:
            mapping = indent - previous_indent
        previous_indent, previous_opens = indent, _opens_block(content)
    mapping = mapping or 2
    offset = 2 if offset is None else offset
    return mapping, offset + 2, offset


@dataclass
class YamlDocument:
    """A YAML file held as ruamel's round-trip tree plus its original text."""

    path: Path
    original: str
    data: CommentedMap
    _yaml: YAML = field(repr=False)

    @classmethod
    def parse(cls, path: Path, text: str, display: str | None = None) -> YamlDocument:
        try:
            indents = _guess_indents(text)
            yaml = _make_yaml(*indents)
            data = yaml.load(text)
        except YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            shown = display or str(path)
            where = f"{shown}:{mark.line + 1}" if mark is not None else shown
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise EnvError(
                f"{where}: not valid YAML ({problem})",
                hint="fix the YAML syntax at that line; nothing was changed",
            ) from err
        if data is None:
            data = CommentedMap()
        if not isinstance(data, CommentedMap):
            raise EnvError(
                f"{display or path}: the top level must be a mapping of keys, "
                f"not {type(data).__name__}",
                hint="an env file starts with keys such as `name:` and `n8n:`",
            )
        return cls(path=path, original=text, data=data, _yaml=yaml)

    @classmethod
    def load(cls, path: Path, display: str | None = None) -> YamlDocument:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as err:
            raise EnvError(f"{display or path}: file not found") from err
        except (OSError, UnicodeDecodeError) as err:
            raise EnvError(f"{display or path}: cannot read ({err})") from err
        return cls.parse(path, text, display)

    def get(self, key_path: KeyPath, default: Any = None) -> Any:
        node: Any = self.data
        for key in key_path:
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    def set(self, key_path: KeyPath, value: Any) -> None:
        """Set a value, creating missing block-style maps along the way."""
        node: Any = self.data
        for key in key_path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = CommentedMap()
            node = node[key]
        node[key_path[-1]] = value

    def dumps(self) -> str:
        buffer = io.StringIO()
        self._yaml.dump(self.data, buffer)
        return buffer.getvalue()

    @property
    def changed(self) -> bool:
        return self.dumps() != self.original


def to_plain(value: Any) -> Any:
    """A plain-Python copy of a ruamel tree (for jsonschema and JSON output)."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    return value
