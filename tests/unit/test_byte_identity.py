"""Every form n8nlock writes, byte for byte: a refactor of the builders changes none of them.

The wrapped corpus in every combination of guard, rate limits and lock that the commands make,
and the primitives under non-default render options, each as the SHA-256 of its file text
(`tests/fixtures/byte_identity.json`; the full text of a few is in the golden files). A
digest that changes is a change of what users get: intended only with a reason in the commit,
and then `pytest --update-goldens` writes the new digests.

To see what changed for a case, render it at the old commit and now:
`python -m tests.unit.test_byte_identity CASE` prints its text.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from n8n_lockkit.check.rules.base import strings_in
from n8n_lockkit.errors import LockkitError
from n8n_lockkit.primitives.catalogue import PRIMITIVES
from n8n_lockkit.primitives.render import RenderOptions, dump_workflow, render_primitive
from n8n_lockkit.rewrite.wrapping.compose import compose
from n8n_lockkit.rewrite.wrapping.debounce_wrap import DebounceConfig
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, RateLimitConfig

CORPUS = Path(__file__).parent.parent / "corpus"
DIGESTS = Path(__file__).parent.parent / "fixtures" / "byte_identity.json"
NAMES = sorted(p.name.removesuffix(".template.json") for p in CORPUS.glob("*.template.json"))

SCOPE = "={{ 'order-' + $json.body.orderId }}"
LOCK = LockConfig(SCOPE, 300, 60, "wait", True)
SKIP = LockConfig("orders", 120, 30, "skip", True)
BUFFER = LockConfig("=sync-{{ $json.account }}", 600, 900, "buffer-one", False)
SEMAPHORE = LockConfig(SCOPE, 300, 60, "error", True, max_concurrent=3)
SUB = LockConfig(SCOPE, 300, 60, "wait", True, via_subworkflow=True)
PARK = LockConfig(SCOPE, 300, 60, "wait", True, park=True)
GUARD = LockConfig(
    "=dedupe-{wf}-{{ $json.body.eventId }}",
    3600,
    86400,
    "skip",
    True,
    dedupe_window_seconds=600,
    dedupe_key="={{ $json.body.eventId }}",
)
# --on-duplicate replay: its duplicates wait 60 s for the first run, answers up to 4 KB.
REPLAY = LockConfig(**{**GUARD.__dict__, "max_wait_seconds": 60, "on_busy": "replay",
                       "max_answer_bytes": 4096})  # fmt: skip
RATE = RateLimitConfig("=api-{{ $json.body.customer }}", 5, 60, "passthrough")
RATES = (
    RateLimitConfig("api", 10, 1, "passthrough"),
    RateLimitConfig("=tenant-{{ $json.tenant }}", 100, 60, "stop", "fixed", "2"),
    RateLimitConfig("global", 1000, 3600, "error", "sliding", "={{ $json.items.length }}"),
)
WAITING = RateLimitConfig("paid-api", 3, 2, "wait", max_wait_seconds=120)
FIXED = RateLimitConfig("=tenant-{{ $json.tenant }}", 100, 60, "stop", "fixed")

Forms = tuple[LockConfig | None, Any, LockConfig | None]
FORMS: dict[str, Forms] = {
    "lock": (LOCK, None, None),
    "lock-rate": (LOCK, RATE, None),
    "sub-rate": (SUB, RATE, None),
    "skip": (SKIP, None, None),
    "buffer-one": (BUFFER, WAITING, None),
    "semaphore": (SEMAPHORE, RATES, None),
    "rates": (None, RATES, None),
    "waiting": (None, WAITING, None),
    "fixed": (None, FIXED, None),  # a fixed window alone: no slots, no Commit, no Restamp
    "guard": (None, None, GUARD),
    "guard-rate-lock": (LOCK, RATE, GUARD),
    "replay": (None, None, REPLAY),
    "renew": (LOCK, None, None),  # renewing before the body's first node
    "park": (PARK, None, None),  # waiters park (refused for a webhook that answers last)
}

# A debounce alone and composed (issue 34): guard → debounce → rate limit → lock → body.
DEBOUNCE = DebounceConfig("={{ $json.body.chatId }}", 5, 30, 20)
DEBOUNCED: dict[str, Forms] = {
    "debounce": (None, None, None),
    "debounce-lock": (LOCK, None, None),
    "debounce-rate-lock": (LOCK, WAITING, None),
    "debounce-guard": (None, None, GUARD),
    "debounce-guard-rate-lock": (LOCK, WAITING, GUARD),
}


def _wrapped(name: str, form: str, debounce: DebounceConfig | None = None) -> str:
    """A corpus workflow in one form (composed with `debounce` when given; wrap's otherwise)."""
    lock, rate, guard = (DEBOUNCED if debounce else FORMS)[form]
    if guard is not None:
        guard = LockConfig(**{**guard.__dict__, "scope": guard.scope.replace("{wf}", name)})
    try:
        return dump_workflow(compose(json.loads((CORPUS / f"{name}.template.json").read_text()),
                                     name, lock, rate, guard, debounce))  # fmt: skip
    except LockkitError as err:  # a refusal is a result too
        return f"refused: {err.message}\n"


OPTIONS = RenderOptions(default_ttl_seconds=600, default_max_wait_seconds=120)


def _cases() -> dict[str, Callable[[], str]]:
    cases: dict[str, Callable[[], str]] = {}
    for name in NAMES:
        for form in FORMS:
            cases[f"wrap/{name}/{form}"] = lambda n=name, f=form: _wrapped(n, f)  # type: ignore[misc]
        for form in DEBOUNCED:
            cases[f"debounce/{name}/{form}"] = lambda n=name, f=form: _wrapped(n, f, DEBOUNCE)  # type: ignore[misc]
    for key, primitive in PRIMITIVES.items():
        cases[f"primitive/{key}/options"] = lambda p=primitive: dump_workflow(  # type: ignore[misc]
            render_primitive(p, OPTIONS)
        )
    return cases


CASES = _cases()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_every_form_renders_byte_identical_to_its_recorded_digest(update_goldens: bool) -> None:
    actual = {case: _digest(render()) for case, render in CASES.items()}
    if update_goldens or not DIGESTS.exists():
        DIGESTS.write_text(json.dumps(actual, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(DIGESTS.read_text(encoding="utf-8"))
    changed = sorted(case for case in actual if expected.get(case) != actual[case])
    assert not changed, (
        f"{len(changed)} form(s) render differently: {', '.join(changed[:12])}; "
        "see `python -m tests.unit.test_byte_identity CASE`, and if intended run "
        "pytest --update-goldens"
    )
    assert sorted(expected) == sorted(actual), "the recorded cases differ from the matrix"


def test_the_matrix_wraps_more_than_it_refuses() -> None:
    refused = [case for case, render in CASES.items() if render().startswith("refused: ")]
    assert len(refused) < len(CASES) // 4, refused


# `$("Name")` or `$('Name')` in an expression: n8n fails the node at run time ("Referenced
# node doesn't exist") when no node has that name, so a generated chain must name only its own.
_REFERENCE = re.compile(r"""\$\((?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\)""")


def test_every_node_a_generated_expression_names_is_in_its_workflow() -> None:
    missing: dict[str, list[str]] = {}
    for case, render in CASES.items():
        text = render()
        if text.startswith("refused: "):
            continue
        nodes = json.loads(text)["nodes"]
        names = {n["name"] for n in nodes}
        named = {json.loads(f'"{a or b}"') for n in nodes
                 for _, value in strings_in(n.get("parameters", {}))
                 for a, b in _REFERENCE.findall(value)}  # fmt: skip
        if unknown := sorted(named - names):
            missing[case] = unknown
    assert not missing, missing


if __name__ == "__main__":  # print one case's text, to diff it against another commit's
    sys.stdout.write(CASES[sys.argv[1]]())
