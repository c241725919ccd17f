"""The lock's n8n nodes exactly as `engine.py` generates them, as JSON for `explore.mjs`.

`graphs()` builds, for a mutex and a semaphore of three lanes (and variants: a short max
wait, fail-fast), the acquire chain
(`engine.acquire`, the scope read from the caller's item as `={{ $json.scope }}`) and the
release chain (`engine.release`, on the record Lock Decide wrote, as the inline form does):

    {"mutex": {"slots": 1, "ttl_seconds": …, "max_wait_seconds": …,
               "acquire": {nodes, connections, entry, exits}, "release": {…}},
     "semaphore": {"slots": 3, …}}

`--root DIR` builds from another checkout (a tree holding `n8n_lockkit/` and `templates/`), and
`--commit REV` from a commit of this repository (extracted with `git archive` into a temporary
folder; the work tree and the repository are not touched): `--commit 9cb0f7b` is the engine
before the stall-safe format 3.

The command line adds the debounce chains (`debounce_graphs()`, keyed `debounce…`) for
`explore.mjs --debounce NAME` (tests/unit/test_debounce_model.py).

    python tests/model/graph.py [-o FILE] [--commit REV | --root DIR] [--ttl S] [--max-wait S]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCOPE = "={{ $json.scope }}"
HELD = '$("Lock Decide").first().json'  # what the inline release reads (rewrite/wrapping/wrap.py)
TTL_SECONDS = 30
MAX_WAIT_SECONDS = 120
# name: (lanes, max wait in seconds or None for --max-wait, whether callers wait)
LOCKS: dict[str, tuple[int, int | None, bool]] = {
    "mutex": (1, None, True),
    "semaphore": (3, None, True),
    "mutex_short_wait": (1, 10, True),  # callers give up (their `gone` mark) under stalls
    "semaphore_short_wait": (3, 10, True),
    "mutex_fail_fast": (1, None, False),  # wait_till_lock_released=false
}
# Locks whose waiters park (engine.acquire(parks=True), add-lock-to-workflow --park), for an
# engine that has parking.
PARKED_LOCKS: dict[str, tuple[int, int | None, bool]] = {
    "mutex_park": (1, None, True),
    "semaphore_park": (3, None, True),
}


# The push placeholder of the env's key namespace (format 4 on): resolved as a push resolves
# it for an env without keyPrefix, so that the model runs the keys of today.
NAMESPACE_PLACEHOLDER = "{{@:env:keyPrefix}}"


def _resolved(value: Any) -> Any:
    return json.loads(json.dumps(value).replace(NAMESPACE_PLACEHOLDER, ""))


def _group(group: Any) -> dict[str, Any]:
    return {
        "nodes": _resolved(group.nodes),
        "connections": group.connections,
        "entry": group.entry,
        "exits": {
            name: [[node, index] for node, index in ends] for name, ends in group.exits.items()
        },
    }


def _key_names(keys: Any) -> dict[str, Any] | None:
    """What the model's cleanup handler (explore.mjs `--heal-after-ms`) writes by: the key
    schema of a namespace-less env and the TTLs the handler uses; None for an engine older
    than the key schema."""
    schema = getattr(keys, "KeySchema", None)
    if schema is None:
        return None
    names = schema("")
    return {
        "lock": names.lock,
        "index": names.index,
        "holder": names.holder,
        "gone": names.gone,
        "meta": names.meta,
        "served": names.served,
        "gone_ttl": keys.GONE_MIN_TTL_SECONDS,
        "released_ttl": keys.RELEASED_META_TTL_SECONDS,
    }


def build(ttl: int = TTL_SECONDS, max_wait: int = MAX_WAIT_SECONDS) -> dict[str, Any]:
    """The graphs of the engine importable as `n8n_lockkit` in this interpreter."""
    engine = importlib.import_module("n8n_lockkit.primitives.engine")
    keys = importlib.import_module("n8n_lockkit.primitives.keys")
    out: dict[str, Any] = {}
    parking = "parks" in inspect.signature(engine.acquire).parameters
    locks = {**LOCKS, **(PARKED_LOCKS if parking else {})}
    for name, (slots, wait_seconds, wait) in locks.items():
        parks = {"parks": True} if name in PARKED_LOCKS else {}
        seconds = max_wait if wait_seconds is None else wait_seconds
        inputs = engine.LockInputs(
            scope=SCOPE, ttl_seconds=ttl, max_wait_seconds=seconds, wait=wait, slots=slots
        )
        out[name] = {
            "slots": slots,
            "ttl_seconds": ttl,
            "max_wait_seconds": seconds,
            "wait": wait,
            "format": getattr(keys, "FORMAT", 2),
            "skip_grace_ms": int(engine.SKIP_GRACE_MS),
            "max_sleep_ms": int(engine.MAX_SLEEP_MS),
            "max_poll_ms": int(engine.MAX_POLL_MS),
            "engine_file": str(Path(str(engine.__file__)).resolve()),
            "keys": _key_names(keys),
            "parks": bool(parks),
            "park_limit_ms": int(getattr(engine, "PARK_LIMIT_S", 0)) * 1000,
            "acquire": _group(engine.acquire("model", inputs, (0, 0), **parks)),
            "release": _group(engine.release("model", HELD, (0, 1200), **parks)),
        }
    return out


# Debounces the model runs (docs/debounce.md): name: (Q, M, N), small, so that schedules of a
# few seconds reach every path (quiet, max wait, full).
DEBOUNCES: dict[str, tuple[int, int, int]] = {
    "debounce": (2, 6, 4),
    "debounce_fast": (1, 3, 3),
}
DEBOUNCE_KEY = "={{ $json.key }}"


def debounce_graphs() -> dict[str, Any]:
    """The debounce chains (`primitives/debounce.py`) of the engine importable here, as
    `add-debounce` wires them (Debounce Answer on to `ANSWERED_ON`), keyed `debounce…`; none
    for an engine older than the debounce."""
    try:
        debounce = importlib.import_module("n8n_lockkit.primitives.debounce")
    except ModuleNotFoundError:
        return {}
    keys = importlib.import_module("n8n_lockkit.primitives.keys")
    out: dict[str, Any] = {}
    for name, (quiet, max_wait, max_items) in DEBOUNCES.items():
        inputs = debounce.DebounceInputs(DEBOUNCE_KEY, quiet, max_wait, max_items)
        chain = debounce.debounce("model", "model", inputs, (0, 0))
        answered_on = getattr(debounce, "ANSWERED_ON", "Debounce Waits?")  # older engines
        chain.link([("Debounce Answer", 0, answered_on)])  # debounce_wrap.py does so
        group = _group(chain)
        group["exits"] = {"burst": group["exits"]["burst"]}
        out[name] = {
            "kind": "debounce",
            "quiet_seconds": quiet,
            "max_wait_seconds": max_wait,
            "max_items": max_items,
            "stale_ms": int(keys.DEBOUNCE_STALE_MS),
            "poll_ms": int(debounce.POLL_MS),
            "engine_file": str(Path(str(debounce.__file__)).resolve()),
            "chain": group,
            # after the body: where the wrap's Debounce Body Items leads besides the body
            "after_body": chain.name("Debounce Next"),
        }
    return out


def extract(commit: str, dest: Path) -> Path:
    """`n8n_lockkit/` and `templates/` of `commit`, written under `dest` (git archive)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit, "n8n_lockkit", "templates"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def graphs(
    root: Path | None = None,
    commit: str | None = None,
    ttl: int = TTL_SECONDS,
    max_wait: int = MAX_WAIT_SECONDS,
) -> dict[str, Any]:
    """The graphs of this checkout's engine, or of another tree or commit (built by a fresh
    interpreter, so that the two engines never share a module)."""
    if root is None and commit is None:
        return build(ttl, max_wait)
    with tempfile.TemporaryDirectory(prefix="n8nlock-model-") as temp:
        tree = root if root is not None else extract(str(commit), Path(temp))
        done = subprocess.run(
            [sys.executable, __file__, "--root", str(tree), "--ttl", str(ttl),
             "--max-wait", str(max_wait)],
            check=True,
            capture_output=True,
            text=True,
        )  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout)
    return {name: g for name, g in result.items() if g.get("kind") != "debounce"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-o", "--output", type=Path, help="write here (default: stdout)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--root", type=Path, help="a tree holding n8n_lockkit/ and templates/")
    where.add_argument("--commit", help="a commit of this repository, e.g. 9cb0f7b")
    parser.add_argument("--ttl", type=int, default=TTL_SECONDS)
    parser.add_argument("--max-wait", type=int, default=MAX_WAIT_SECONDS)
    args = parser.parse_args(argv)
    if args.root is not None:
        sys.path.insert(0, str(args.root.resolve()))  # before the editable install's path
        data = build(args.ttl, args.max_wait)
        if not data["mutex"]["engine_file"].startswith(str(args.root.resolve())):
            raise SystemExit(f"imported {data['mutex']['engine_file']}, not the one in {args.root}")
    else:
        data = graphs(commit=args.commit, ttl=args.ttl, max_wait=args.max_wait)
    data.update(debounce_graphs())  # explore.mjs --debounce NAME
    text = json.dumps(data, indent=1)
    if args.output is None:
        sys.stdout.write(text + "\n")
    else:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
