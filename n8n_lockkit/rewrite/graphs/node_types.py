"""n8n's node catalogue: which node types are triggers, and which types n8n knows at all.

The data file `data/node_types.json` is generated from the node descriptions shipped in the
n8n packages of every supported version (`python -m scripts.gen_node_catalogue --write`;
a test proves it is current). A type is a trigger when its description puts it in the
`trigger` group, or it polls, or it answers webhooks from the trigger group: these are the
nodes n8n starts an execution from.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

# Types that old exports use and that newer n8n no longer describes (or hides). They
# started executions when those exports were made, so they still count as triggers.
LEGACY_TRIGGERS = {
    "n8n-nodes-base.start": ("manual",),
    "n8n-nodes-base.cron": ("trigger",),
    "n8n-nodes-base.interval": ("trigger",),
}


@cache
def _catalogue() -> dict[str, Any]:
    text = resources.files("n8n_lockkit").joinpath("data/node_types.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def _triggers() -> dict[str, tuple[str, ...]]:
    found: dict[str, set[str]] = {}
    for version in _catalogue()["versions"].values():
        for node_type, traits in version["triggers"].items():
            found.setdefault(node_type, set()).update(traits)
    for node_type, traits in LEGACY_TRIGGERS.items():
        found.setdefault(node_type, set()).update(traits)
    return {node_type: tuple(sorted(traits)) for node_type, traits in found.items()}


@cache
def _known() -> frozenset[str]:
    types = set(_triggers())
    for version in _catalogue()["versions"].values():
        types.update(version["others"])
    return frozenset(types)


def trigger_traits(node_type: str) -> tuple[str, ...]:
    """How a trigger type starts executions (`trigger`, `polling`, `webhook`, `manual`);
    empty for a type that is not a trigger."""
    return _triggers().get(node_type, ())


def is_trigger_type(node_type: str) -> bool:
    return node_type in _triggers()


def is_known_type(node_type: str) -> bool:
    """Whether a supported n8n version ships this node type (community nodes are unknown)."""
    return node_type in _known()


def catalogue_versions() -> tuple[str, ...]:
    return tuple(_catalogue()["versions"])
