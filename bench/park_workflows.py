"""The workflows of `bench.park_handoff`: today's engine wrapped by n8nlock, an unrelated
one-node workflow, and the prototypes of a ticket mutex whose waiters poll, park in a Wait
"On Webhook Call" resumed by the releaser's HTTP Request, or both (hybrids). Plain dicts of
n8n nodes; `bench.park_handoff` installs and times them.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any

from bench.harness.runs import REDIS
from bench.harness.workspace import chained, node, webhook
from n8n_lockkit.primitives.nodekit import if_parameters

PARK_LIMIT_S = 120  # the parked Wait's "Limit Wait Time": the backstop for a lost resume
POLL_MS = 25  # hybrids: how often the one next in line looks at `done`
RETRY_MS = 25  # a resume refused with 409 (not parked yet) is sent again after this
RETRIES = 40  # at most this many times (about a second)
RESUME_TIMEOUT_MS = 2000  # the HTTP Request's timeout; a timed-out resume may still land
BODY = "$('Webhook').first().json.body"
BASE = f"('pk:' + {BODY}.scope + ':')"  # the prototype's keys of a scope
TICKET = "Object.values($('Ticket').first().json)[0]"


def body_nodes(key: str, x: int) -> list[dict[str, Any]]:
    """Hold (Wait hold_ms) → Work (Code) → Respond (its item), from x on."""
    hold = f"={{{{ Math.max(0.01, {BODY}.hold_ms / 1000) }}}}"
    return [
        node(
            key, "Hold", "n8n-nodes-base.wait", 1.1, x,
            {"resume": "timeInterval", "amount": hold, "unit": "seconds"},
            webhookId=str(uuid.uuid5(uuid.NAMESPACE_URL, key + "-hold")),
        ),
        node(
            key, "Work", "n8n-nodes-base.code", 2, x + 220,
            {"jsCode": "return [{ json: { done: Date.now() } }];"},
        ),
        node(
            key, "Respond", "n8n-nodes-base.respondToWebhook", 1.1, x + 440,
            {"respondWith": "firstIncomingItem", "options": {}},
        ),
    ]  # fmt: skip


def responding_webhook(key: str) -> dict[str, Any]:
    hook = webhook(key)
    hook["parameters"]["responseMode"] = "responseNode"
    return hook


def polling_workflow(key: str) -> dict[str, Any]:
    """The body alone; `add-lock-to-workflow` wraps it."""
    return chained(key, [responding_webhook(key), *body_nodes(key, 220)])


def unrelated_workflow(key: str) -> dict[str, Any]:
    """One Webhook node that answers with its own item once its execution ran."""
    return chained(key, [webhook(key)])


def _redis(
    key: str, name: str, x: int, parameters: dict[str, Any], credential: dict[str, str]
) -> dict[str, Any]:
    return node(key, name, REDIS, 1, x, parameters, credentials={"redis": credential})


def _if(key: str, name: str, x: int, test: str) -> dict[str, Any]:
    return node(key, name, "n8n-nodes-base.if", 2.2, x, if_parameters(key + name, test))


def _wait(key: str, name: str, x: int, parameters: dict[str, Any]) -> dict[str, Any]:
    webhook_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}-{name}"))
    return node(key, name, "n8n-nodes-base.wait", 1.1, x, parameters, webhookId=webhook_id)


@dataclass(frozen=True)
class Prototype:
    """How a prototype waits and hands over. `parks`: waiters park (else every waiter polls);
    `polls`: the one next in line stays awake and looks every POLL_MS; `wake_at`: who resumes a
    parked waiter, the releaser after its release (`release`) or a holder as it enters, before
    its body (`entry`); `step`: it resumes its own ticket + step."""

    parks: bool
    polls: bool
    wake_at: str = "release"
    step: int = 1


PROTOTYPES = {
    "polled": Prototype(parks=False, polls=True),
    "parked": Prototype(parks=True, polls=False),
    "hybrid_entry": Prototype(parks=True, polls=True, wake_at="entry"),
    "hybrid_release": Prototype(parks=True, polls=True, step=2),
}
# The engine's designs: this checkout's add-lock-to-workflow, with these flags.
ENGINE_DESIGNS = {"polling": ("--no-park",), "engine_parked": ("--park",)}
DESIGNS = (*ENGINE_DESIGNS, *PROTOTYPES)
LABELS = {
    "polling": "polling (today's engine)",
    "engine_parked": "the engine with `--park`",
    "polled": "prototype, all poll",
    "parked": "parked",
    "hybrid_entry": "hybrid, woken at entry",
    "hybrid_release": "hybrid, woken after release",
}


def decide_expression(shape: Prototype) -> str:
    """The prototypes' Decide: enter, poll (next in line, or anyone when nobody parks),
    register the resume URL, park, or (registered, then found it need not park) unregister
    first, so that whoever would resume it stops sending resumes that n8n refuses."""
    if not shape.parks:
        return (
            f"={{{{ (() => {{ const t = {TICKET}; const done = Number($json.done ?? 0); "
            "const ahead = t - done - 1; const state = ahead <= 0 ? 'enter' : 'poll'; "
            "return { ticket: t, done, ahead, state }; })() }}"
        )
    poll = "ahead === 1 ? 'poll' : " if shape.polls else ""
    return (
        f"={{{{ (() => {{ const t = {TICKET}; const done = Number($json.done ?? 0); "
        "const ahead = t - done - 1; const registered = $('Register').isExecuted; "
        f"let state = ahead <= 0 ? 'enter' : {poll}(registered ? 'park' : 'register'); "
        "if (state !== 'park' && registered && !$('Park').isExecuted "
        "&& !$('Unregister').isExecuted) state = 'unregister'; "
        "return { ticket: t, done, ahead, state }; })() }}"
    )


def wake_nodes(key: str, x: int, step: int, credential: dict[str, str]) -> list[dict[str, Any]]:
    """Next (GET the resume URL of ticket + `step`) → Parked? → Resume (POST it) → Refused?
    (409: not parked yet) → Retry (a short Wait) → Next again."""
    return [
        _redis(key, "Next", x, {
            "operation": "get", "propertyName": "url",
            "key": f"={{{{ {BASE} + 'park:' + ({TICKET} + {step}) }}}}",
            "keyType": "string", "options": {"dotNotation": False},
        }, credential),
        _if(key, "Parked?", x + 220, "$json.url !== null"),
        node(key, "Resume", "n8n-nodes-base.httpRequest", 4.2, x + 440, {
            "method": "POST", "url": "={{ $('Next').first().json.url }}",
            "options": {
                "timeout": RESUME_TIMEOUT_MS,
                "response": {"response": {"neverError": True, "fullResponse": True}},
            },
        }, onError="continueRegularOutput"),
        _if(key, "Refused?", x + 660, f"$json.statusCode === 409 && $runIndex < {RETRIES}"),
        _wait(key, "Retry", x + 880, {
            "resume": "timeInterval", "amount": RETRY_MS / 1000, "unit": "seconds",
        }),
    ]  # fmt: skip


def waiting_nodes(key: str, shape: Prototype, credential: dict[str, str]) -> list[dict[str, Any]]:
    """Register (SET `park:<t>` to the resume URL), Park (Wait "On Webhook Call") and
    Unregister (DEL `park:<t>`), and Poll (a short Wait), as the prototype has them; each goes
    back to Look."""
    register = _redis(key, "Register", 1100, {
        "operation": "set", "key": f"={{{{ {BASE} + 'park:' + $json.ticket }}}}",
        "value": "={{ $execution.resumeUrl }}", "keyType": "string", "expire": True, "ttl": 600,
    }, credential)  # fmt: skip
    park = _wait(key, "Park", 1100, {
        "resume": "webhook", "httpMethod": "POST", "limitWaitTime": True,
        "limitType": "afterTimeInterval", "resumeAmount": PARK_LIMIT_S, "resumeUnit": "seconds",
        "options": {},
    })  # fmt: skip
    unregister = _redis(key, "Unregister", 1100, {
        "operation": "delete", "key": f"={{{{ {BASE} + 'park:' + $json.ticket }}}}",
    }, credential)  # fmt: skip
    poll = _wait(
        key, "Poll", 1100, {"resume": "timeInterval", "amount": POLL_MS / 1000, "unit": "seconds"}
    )
    parking = [register, park, unregister] if shape.parks else []
    return [*parking, *([poll] if shape.polls else [])]


def prototype(key: str, design: str, credential: dict[str, str]) -> dict[str, Any]:
    """A ticket mutex around the body, waiting and handing over as PROTOTYPES[design] says:
    Webhook → Ticket → Look → Decide → Route → (enter) [wake at entry] Hold → Work → Respond →
    Release [wake after release]; Route's other outputs wait and go back to Look."""
    shape = PROTOTYPES[design]
    waiting = waiting_nodes(key, shape, credential)
    routes = ["enter", *(n["name"].lower() for n in waiting)]
    index = ", ".join(f"{state}: {i}" for i, state in enumerate(routes))
    at_entry = shape.parks and shape.wake_at == "entry"
    after_release = shape.parks and shape.wake_at == "release"
    nodes = [
        responding_webhook(key),
        _redis(key, "Ticket", 220, {
            "operation": "incr", "key": f"={{{{ {BASE} + 'ticket' }}}}", "expire": True,
            "ttl": 600,
        }, credential),
        _redis(key, "Look", 440, {
            "operation": "get", "propertyName": "done", "key": f"={{{{ {BASE} + 'done' }}}}",
            "keyType": "string", "options": {"dotNotation": False},
        }, credential),
        node(key, "Decide", "n8n-nodes-base.set", 3.4, 660, {
            "mode": "raw", "jsonOutput": decide_expression(shape), "includeOtherFields": False,
            "options": {},
        }),
        node(key, "Route", "n8n-nodes-base.switch", 3.2, 880, {
            "mode": "expression", "numberOutputs": len(routes),
            "output": f"={{{{ ({{ {index} }})[$json.state] ?? 0 }}}}",
        }),
        *waiting,
        *(wake_nodes(key, 1320, shape.step, credential) if at_entry else []),
        *body_nodes(key, 2420 if at_entry else 1320),
        _redis(key, "Release", 3080 if at_entry else 1980, {
            "operation": "incr", "key": f"={{{{ {BASE} + 'done' }}}}", "expire": True,
            "ttl": 600,
        }, credential),
        *(wake_nodes(key, 2200, shape.step, credential) if after_release else []),
    ]  # fmt: skip
    connections: dict[str, Any] = {}

    def link(source: str, *outputs: list[dict[str, Any]]) -> None:
        connections[source] = {"main": list(outputs)}

    def to(target: str) -> list[dict[str, Any]]:
        return [{"node": target, "type": "main", "index": 0}]

    body = ["Hold", "Work", "Respond", "Release", *(["Next"] if after_release else [])]
    for source, target in itertools.pairwise(["Webhook", "Ticket", "Look", "Decide", "Route"]):
        link(source, to(target))
    for source, target in itertools.pairwise(body):
        link(source, to(target))
    link("Route", to("Next" if at_entry else "Hold"), *(to(n["name"]) for n in waiting))
    for waiter in waiting:
        link(waiter["name"], to("Look"))
    if shape.parks:  # when Parked? or Refused? says no: the body, or nothing after release
        then = to("Hold") if at_entry else []
        link("Next", to("Parked?"))
        link("Parked?", to("Resume"), then)
        link("Resume", to("Refused?"))
        link("Refused?", to("Retry"), then)
        link("Retry", to("Next"))  # it may have unregistered meanwhile
    return {
        "name": key,
        "nodes": nodes,
        "connections": connections,
        "settings": {"executionOrder": "v1"},
    }
