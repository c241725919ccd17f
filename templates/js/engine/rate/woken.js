// After a sleep: a call that booked its slots goes if it woke in time; one that woke later has
// spent them and looks again. Unlike Rate Limit Outcome it does not write them again from now:
// a Wait node wakes that late only when n8n stalled or is overloaded, and a fresh look is the
// safe answer then. Any other call looks again.
if ($json.state === 'sleep' && Date.now() - $json.planned_ms <= << gate_ms >>) return { ...$json, state: 'allow' };
return { ...$json, state: 'look' };
