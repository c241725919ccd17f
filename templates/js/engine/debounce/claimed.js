// A claims list whose first mark is "e" is an event that stored its items before any runner
// came: it is in this burst, for every runner of it (they all read the same first mark).
const w = << decision >>;
const take = << take >>;
const first = (key) => {
  const list = << read >>.map((item) => item.json[key]).find((v) => v !== undefined);
  return Array.isArray(list) ? list[0] : undefined;
};
return {
  c: take.c,
  mine: take.mine,
  own: take.tickets.filter((t) => first(`${w.base}<< keys.event_claim >>${t}`) === 'e'),
};
