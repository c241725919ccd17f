// After the pass and the reads, right before the body: meet event c + 1 at `after:c` (who
// waits next) and the next runner at `ran:<c>` (who runs this burst). `after:c` comes after
// the pass, so that no runner of the next burst exists before `burst:<c>` does.
const w = << decision >>;
const claimed = << claimed >>;
return {
  incr: [
    { key: `${w.base}<< keys.after >>${claimed.c}`, expire: true, ttl: << debounce_ttl >> },
    { key: `${w.base}<< keys.ran >>${claimed.c}`, expire: true, ttl: << debounce_ttl >> },
  ],
};
