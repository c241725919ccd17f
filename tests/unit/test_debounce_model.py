"""A model check of the debounce (add-debounce, docs/debounce.md), on its real nodes.

`tests/model/graph.py` dumps the chain `primitives/debounce.py` generates (Q 2 s, M 6 s, N 4,
and Q 1 s, M 3 s, N 3), wired as add-debounce wires it; `explore.mjs --debounce` runs it in the
lock model's mini n8n against the same simulated Redis (`tests/model/debounce.mjs`): events on
one or two keys in bursts (gaps below and above Q), interleaved one atomic step at a time, with
the lock model's stalls of whole processes (3, 6, 20 s, random), failing Redis commands, nodes
that run again and crashes. When every execution has ended, one more event per key arrives (a
burst whose waiter died runs with the key's next event). It checks that every answered event is
in exactly one body, events in ticket order and whole in it, no body mixes keys, at most one
execution waits per burst but for a take-over, every surviving event is answered.

Each test prints a reproducible schedule on failure: `tests/model/run.sh current --debounce
debounce --replay '<spec>'` replays it with its whole trace. The number of random schedules per
test is N8NLOCK_MODEL_SCHEDULES (default: about 60 s in all on two cores).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.model import graph
from tests.unit import test_lock_model
from tests.unit.test_lock_model import (
    STALLS,
    _run,
    assert_safe,
    bases,
    explore,
    mutated,
    report,
    schedules,
)

# The lock model's marks: slow, and skipped without Node.js.
pytestmark = test_lock_model.pytestmark

# Failing commands and stalls inside an expression only where n8n runs the node again: a
# rendezvous INCR is never retried (its failure fails the execution, a death: below).
RETRIED_FAULTS = ["--redis-faults", "0.03", "--faults-retried-only"]


# The runner's steps from drawing its cut to its pass. A death there stopped the key for a day
# in the INCR version (docs/debounce.md, "Why INCR cannot close the cut gap"); now the cut is a
# list's first entry and every claim a list's first mark, so a later taker finishes the cut.
CUT_TO_PASS = [
    "Debounce Cut", "Debounce Cut Log", "Debounce Cut Expire", "Debounce Read Cuts",
    "Debounce Take", "Debounce Take Items", "Debounce Claim Events", "Debounce Claims Expire",
    "Debounce Read Claims", "Debounce Claimed", "Debounce Pass Watch", "Debounce Pass Items",
    "Debounce Pass",
]  # fmt: skip
# After `ran:<c>` answered 1 the body has begun (only expressions before its first node): a
# death there is a death in the body, whose burst is not run again.
BODY_BEGUN = {"Debounce Taken", "Debounce Runs?", "Debounce Burst"}


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The debounce chains this checkout's debounce.py generates (built anew on every run)."""
    path = tmp_path_factory.mktemp("model") / "graphs.json"
    path.write_text(json.dumps(graph.debounce_graphs()), encoding="utf-8")
    return path


@pytest.mark.parametrize(("debounce", "events"), [("debounce", "3-10"), ("debounce_fast", "3-12")])
def test_stalls_never_lose_or_double_an_event(graphs: Path, debounce: str, events: str) -> None:
    """Stalls of whole processes and of Redis; one of 5 s or more inside an expression of a
    node n8n runs again fails that try (n8n 2.x's expression timeout)."""
    args = ["--debounce", debounce, "--callers", events, *STALLS, "--faults-retried-only"]
    summary = explore(graphs, schedules(1000), *args, seed=1001)
    assert_safe(summary)
    e = summary["events"]
    # The stalls reached the paths that matter: a stale waiter taken over (and meeting its
    # taker at the cut), events that came after their runner passed them, nodes run again.
    assert e["takeovers"] > 0 and e["takeover_overlaps"] > 0 and e["cuts_lost"] > 0, e
    assert e["redraws"] > 0 and e["node_retries"] > 0 and e["answered"] == e["events"], e


def test_retried_redis_commands_never_double_or_lose_an_event(graphs: Path) -> None:
    """3% of the Redis commands of retried nodes fail (before or after they ran) and run
    again (a retried ticket INCR leaves a hole; a node whose three tries fail fails its
    execution): never an event twice, none lost but in a body that had begun."""
    args = ["--debounce", "debounce", "--callers", "3-10", *STALLS, *RETRIED_FAULTS]
    summary = explore(graphs, schedules(500), *args, seed=1051)
    assert set(summary["violations_by_kind"]) <= {"event lost"}, report(summary)
    for v in summary["violations"]:
        dead = {d.removesuffix(" failed").split("#")[0] for d in v["deaths"]}
        assert dead & BODY_BEGUN, report(summary)
    assert summary["events"]["redis_faults"] > 0 and summary["events"]["node_retries"] > 0


def test_a_stall_at_every_step_of_one_event_never_loses_or_doubles_one(graphs: Path) -> None:
    """For each of the first three events of a schedule: stall its process before its step k,
    6 s and 20 s (past the stale limit: it is taken over), for every k of its run."""
    summary = explore(
        graphs, bases(3), "--debounce", "debounce", "--callers", "3-6", "--systematic",
        "--victims", "0,1,2", "--stall-sizes", "6,20", "--faults-retried-only", seed=1101,
    )  # fmt: skip
    assert_safe(summary)
    assert summary["schedules_run"] > 300


def test_deaths_and_failing_rendezvous_never_run_an_event_twice(graphs: Path) -> None:
    """Crashes anywhere and failing commands on every node (a failed rendezvous INCR fails its
    execution): events are lost only in a body that had begun, none is ever in two bodies,
    out of order, beside another key's, or left unanswered while its execution lives; bursts
    whose runner died before its body ran with a later burst."""
    args = ["--debounce", "debounce", "--callers", "3-10", "--crashes", "1-2", *STALLS]
    summary = explore(graphs, schedules(500), *args, "--redis-faults", "0.03", seed=1201)
    assert set(summary["violations_by_kind"]) <= {"event lost"}, report(summary)
    for v in summary["violations"]:
        # A Debounce Ran that failed after its INCR reached Redis is a death in the body too.
        dead = {d.split("#")[0] for d in v["deaths"]}
        assert dead & (BODY_BEGUN | {"Debounce Ran failed"}), report(summary)
    assert summary["outcomes"]["crashed"] > 0 and summary["outcomes"]["failed"] > 0
    assert summary["events"]["recovered_bursts"] > 0, summary["events"]


def _event(i: int, arrival: int) -> dict[str, Any]:
    return {"proc": 0, "key": "a", "items": 1, "arrival": arrival, "hold": 200, "rng": 100 + i}


def _site(caller: int, node: str) -> dict[str, Any]:
    return {"caller": caller, "atNode": node, "item": 0, "occurrence": 0}


def _replay(
    crash: str | None, *, faults: list[dict[str, Any]] | None = None, late: int = 12000
) -> dict[str, Any]:
    """c0 and c1 half a second apart (one burst, c0 its waiter), c2 `late` ms later; c0 dies
    before its node `crash`."""
    return {
        "debounce": "debounce",
        "seed": 1,
        "index": 0,
        "procs": [{"offset": 0, "rate": 1}],
        "callers": [_event(0, 0), _event(1, 500), _event(2, late)],
        "stalls": [],
        "crashes": [] if crash is None else [_site(0, crash)],
        "faults": faults or [],
    }


def lost(graphs: Path, spec: dict[str, Any]) -> list[str]:
    summary = _run(graphs, ["--debounce", spec["debounce"], "--replay", json.dumps(spec)])
    kinds = {v["kind"] for v in summary["replay_violations"]}
    assert kinds <= {"event lost"}, summary["replay_violations"]
    return [str(v["caller"]) for v in summary["replay_violations"]]


# Found by this model: the key's first burst has no watch until its waiter's first look. A
# waiter of ticket 1 that died before it, or a ticket 1 that is a hole (the first event's ticket
# INCR retried, its answer lost: the event draws 2 and meets nobody at `after:1`), left every
# later event of the key buffered, for the keys' TTL (a day): no watch was never a stale one.
# Now an event that finds no watch takes burst 1 over at once (verdict.js).
FIRST_BURST = {
    "first waiter dies before its first look": _replay("Debounce Claim"),
    "the key's first ticket INCR is retried": _replay(
        None, faults=[{**_site(0, "Debounce Take Ticket"), "kind": "after"}]
    ),
}


@pytest.mark.parametrize("case", list(FIRST_BURST))
def test_the_first_burst_of_a_key_is_taken_over_without_a_watch(graphs: Path, case: str) -> None:
    assert lost(graphs, FIRST_BURST[case]) == []


# A runner that dies or fails after Debounce Pass and before its body (before `ran:<c>`): the
# runner of the next burst meets `ran:<c>` first and runs the burst ahead of its own (c2's).
RECOVERED = {
    "runner dies before it reads the records": _replay("Debounce Read Events"),
    "runner dies before `ran:<c>`": _replay("Debounce Ran"),
    "runner's read fails its three tries": _replay(
        None,
        faults=[
            {**_site(0, "Debounce Read Events"), "occurrence": k, "kind": "fail"} for k in range(3)
        ],
    ),
}


@pytest.mark.parametrize("case", list(RECOVERED))
def test_a_burst_whose_runner_died_before_its_body_runs_with_the_next(
    graphs: Path, case: str
) -> None:
    spec = RECOVERED[case]
    summary = _run(graphs, ["--debounce", "debounce", "--replay", json.dumps(spec)])
    assert summary["replay_violations"] == [], summary["replay_violations"]
    assert summary["events"]["recovered_bursts"] == 1, summary["events"]
    bodies = [r["value"].split(" (")[0] for r in summary["trace"] if r.get("op") == "body"]
    # c2's runner runs the dead runner's burst (tickets 1, 2) ahead of its own (ticket 4)
    assert bodies == ["c0#1 c1#2 c2#4", "sweep-a#6"], bodies


@pytest.mark.parametrize("site", CUT_TO_PASS)
def test_a_runner_that_dies_between_its_cut_and_its_pass_loses_no_event(
    graphs: Path, site: str
) -> None:
    """c0 cuts the burst of c0 and c1 and dies before `site`; c2, 12 s later, finds the watch
    stale, takes the burst over, finishes c0's cut (the list's first entry) and runs it."""
    assert lost(graphs, _replay(site)) == []


def _dying_runners(dying: int) -> dict[str, Any]:
    """`dying` bursts of one event each, 12 s apart, whose runners all die right before
    `ran:<c>` (after their pass), then one more burst whose runner lives."""
    return {
        **_replay(None),
        "callers": [_event(i, 12000 * i) for i in range(dying + 1)],
        "crashes": [_site(i, "Debounce Ran") for i in range(dying)],
    }


@pytest.mark.parametrize(("dying", "lost_events"), [(20, []), (21, ["c0"])])
def test_a_runner_walks_back_twenty_unrun_bursts_and_no_further(
    graphs: Path, dying: int, lost_events: list[str]
) -> None:
    """The documented limit (docs/debounce.md, keys.DEBOUNCE_WALK_MAX): the living runner runs
    the 20 bursts before its own that lost every runner before their bodies, oldest first, in
    one body; a 21st further back is lost."""
    spec = _dying_runners(dying)
    summary = _run(graphs, ["--debounce", "debounce", "--replay", json.dumps(spec)])
    kinds = {v["kind"] for v in summary["replay_violations"]}
    assert kinds <= {"event lost"}, summary["replay_violations"]
    assert [str(v["caller"]) for v in summary["replay_violations"]] == lost_events
    bodies = [r["value"].split(" (")[0] for r in summary["trace"] if r.get("op") == "body"]
    ran = [event.split("#")[0] for event in bodies[0].split()]
    assert ran == [f"c{i}" for i in range(len(lost_events), dying + 1)], bodies


# A taker that dies between its take-over INCR and its first look: the watch stays as stale as
# it was. Keyed by the stale watch alone (`:take:<s>:<at>`), every later event met the dead
# taker's INCR, was buffered, and the key stopped for its day (found by reading, missed by the
# crash tests: without stalls nobody takes over). Now the take key names the event's 6 s slot,
# and the key's next event in a later slot (here the sweeper, 7 s after the last execution
# ended) takes the burst over again.
TAKER_DIES = ["Debounce Took?", "Debounce Watch", "Debounce Beacon"]


@pytest.mark.parametrize("site", TAKER_DIES)
def test_a_taker_that_dies_before_its_first_look_is_taken_over_in_turn(
    graphs: Path, site: str
) -> None:
    """c0 (the burst's waiter) dies right before its cut, c2 takes the stale burst over 12 s
    later and dies before `site`; the sweeper takes it over again and runs all three."""
    spec = _replay("Debounce Cut")
    spec["crashes"].append(_site(2, site))
    summary = _run(graphs, ["--debounce", "debounce", "--replay", json.dumps(spec)])
    assert summary["replay_violations"] == [], summary["replay_violations"]
    bodies = [r["value"].split(" (")[0] for r in summary["trace"] if r.get("op") == "body"]
    assert bodies == ["c0#1 c1#2 c2#3 sweep-a#4"], bodies


def test_only_a_death_after_the_body_began_loses_events(graphs: Path) -> None:
    """A crash before every step of each of the first three events (systematic): the steps
    whose death loses an answered event are exactly those after `ran:<c>`, where its body has
    begun; a death anywhere else (an event's, a waiter's, a runner's before its body) costs at
    most a delay."""
    summary = explore(
        graphs, bases(2), "--debounce", "debounce", "--callers", "3-6", "--systematic",
        "--victims", "0,1,2", "--stall-sizes", "", "--kill", "--samples", "100000",
        "--trace-length", "0", seed=1301,
    )  # fmt: skip
    assert set(summary["violations_by_kind"]) <= {"event lost"}, report(summary)
    sites = Counter(d.split("#")[0] for v in summary["violations"] for d in v["deaths"])
    assert set(sites) == BODY_BEGUN, sites


def finds(broken: Path, kind: str, count: int, *args: str, seed: int) -> bool:
    """Whether the model finds a violation of `kind` in a broken variant (at the first one; no
    stall lands inside an expression, so that no death hides the planted bug)."""
    args = ("--debounce", "debounce", "--callers", "3-10", "--inside", "0", *args)
    summary = explore(broken, count, *args, "--stop-after", "1", seed=seed, workers=1)
    found: bool = summary["violations_by_kind"].get(kind, 0) > 0
    return found


def test_a_runner_that_takes_a_ticket_its_event_redrew_runs_it_twice(
    graphs: Path, tmp_path: Path
) -> None:
    """The model can fail: Debounce Claimed made to take every ticket its claim reached (not
    only those whose INCR answered 2, i.e. whose event came first) runs redrawn events twice."""

    def broken(text: str) -> str:
        return text.replace(") === 'e'),", ") !== undefined),", 1)

    bad = mutated(graphs, tmp_path, "Debounce Claimed", broken)
    assert finds(bad, "event run twice", schedules(1000), *STALLS, seed=1402)


def test_an_event_that_waits_on_its_own_after_key_runs_events_twice(
    graphs: Path, tmp_path: Path
) -> None:
    """The model can fail: an event that waits whenever it is first at `after:<n-1>` (not only
    when the cut came first) waits for a burst that begins at its own ticket, inside the burst
    the waiter before it cuts: two cuts take the same tickets, and both run them."""

    def broken(text: str) -> str:
        return text.replace("stored.ticket === 1 || after === 2", "after >= 1", 1)

    bad = mutated(graphs, tmp_path, "Debounce Verdict", broken)
    assert finds(bad, "event run twice", schedules(400), "--stalls", "0-0", seed=1501)


def test_a_runner_that_runs_its_burst_though_the_next_took_it_runs_it_twice(
    graphs: Path, tmp_path: Path
) -> None:
    """The model can fail: a runner that ignores `ran:<c>` (runs its burst though the next
    runner met the key first and ran it) runs its events twice when it was only slow."""

    def broken(text: str) -> str:
        return text.replace("const won = (c) => got(", "const won = (c) => true || got(", 1)

    bad = mutated(graphs, tmp_path, "Debounce Taken", broken)
    assert finds(bad, "event run twice", schedules(1000), *STALLS, seed=1601)
