"""The trigger catalogue n8nlock ships is what the supported n8n versions describe."""

from __future__ import annotations

import json

import pytest

from scripts import gen_node_catalogue
from testbed.progress import Progress
from testbed.settings import n8n_versions


def test_every_supported_version_is_in_the_catalogue() -> None:
    shipped = json.loads(gen_node_catalogue.DATA_FILE.read_text())
    assert sorted(shipped["versions"]) == sorted(gen_node_catalogue.SUPPORTED_VERSIONS)


@pytest.mark.parametrize("version", n8n_versions())
def test_the_catalogue_is_current_for_this_n8n(version: str, testbed_progress: Progress) -> None:
    shipped = json.loads(gen_node_catalogue.DATA_FILE.read_text())
    assert version in shipped["versions"], f"n8n {version} is not in the catalogue"
    fresh = gen_node_catalogue.build([version], testbed_progress)["versions"][version]
    assert shipped["versions"][version] == fresh, (
        "n8n_lockkit/data/node_types.json is stale: run `make node-catalogue`"
    )
