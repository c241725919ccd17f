// After the body: when event c + 1 did not take the wait (Debounce Taken's `next`), this
// execution waits for the burst that begins at c + 1 (still as a taker when it took a burst
// over and found it cut: Debounce Taken's `took`).
const w = << decision >>;
const taken = << taken >>;
return {
  next: taken.next,
  key: w.key, base: w.base, seq_key: w.seq_key, quiet_ms: w.quiet_ms, max_ms: w.max_ms,
  max_items: w.max_items, s: taken.c + 1, first_at: Date.now(), took: taken.took === true,
  sleep: Math.min(w.quiet_ms, << poll_ms >>) / 1000,
};
