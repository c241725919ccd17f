// Right after the cut: the next burst begins at c + 1. Its waiter (event c + 1, or this runner
// after the body) writes the watch from its first look; until then this says when it opened,
// so that a burst whose waiter died before its first look is taken over too.
const w = << decision >>;
const take = << take >>;
return {
  key: `${w.base}<< keys.watch >>`,
  value: JSON.stringify({ s: take.c + 1, at: Date.now(), first_at: Date.now() }),
  ttl: << debounce_ttl >>,
};
