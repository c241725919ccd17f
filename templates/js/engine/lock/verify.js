// After Lock Hold wrote the record: did a caller behind skip this ticket meanwhile? A caller
// skips a head only after SKIP_GRACE of quiet, watched from a look that began after the head's
// ticket was drawn, and a look sees the head's record once it is written. So a record written
// within SAFE_ENTRY of drawing the ticket was seen in time, and the caller holds the lock
// without a read: the uncontended path stays at three Redis node executions. Past that (a
// long wait, or a stall between deciding and writing), Lock Check reads the ticket's `gone`
// mark. Either that read sees the mark (the caller withdraws and draws again), or it came
// before the skip wrote it, and then the record came before too, so the caller after this
// one, which reads this record once `served` names this ticket, waits for it.
const held = << decision >>;
const now = Date.now();
const elapsedMs = now - held.anchor_ms;
return {
  check: elapsedMs >= << safe_entry_ms >>,
  elapsed_ms: elapsedMs,
  gone_key: held.gone_key,
};
