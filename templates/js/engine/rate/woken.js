// After a sleep: a call that booked its slots goes if it woke in time (else, as in Rate Limit
// Outcome, its slots are spent and it looks again); any other looks again.
if ($json.state === 'sleep' && Date.now() - $json.planned_ms <= __GATE_MS__) return { ...$json, state: 'allow' };
return { ...$json, state: 'look' };
