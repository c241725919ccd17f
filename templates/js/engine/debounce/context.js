// An event of a debounce (docs/debounce.md): check its key, name its keys, and draw its ticket.
// Runs as a Set node expression (no task runner); a bad key is answered as { problem } for
// Debounce Input Valid? to stop the execution with it.
<< input >>
const key = input.key === null || input.key === undefined ? '' : String(input.key).trim();
if (!key) {
  return { problem: `n8nlock debounce: the key expression gave an empty key (${JSON.stringify(input.key)}); check --key-expression` };
}
const base = '<< keys.debounce >>' + << workflow >> + ':' + key;
return {
  problem: null,
  key,
  base,
  seq_key: `${base}<< keys.seq >>`,
  quiet_ms: << quiet_ms >>,
  max_ms: << max_ms >>,
  max_items: << max_items >>,
  // An event is the trigger's items, all of them, in order (their JSON).
  items: $input.all().map((item) => item.json),
};
