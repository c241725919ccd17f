// The burst's items for the body: every taken event's items, in ticket (arrival) order.
const w = << decision >>;
const taken = << taken >>;
const read = << read >>;
const items = [];
taken.tickets.forEach((t) => {
  const raw = read.map((item) => item.json[`${w.base}<< keys.event >>${t}`]).find((v) => v !== undefined);
  const record = typeof raw === 'string' ? JSON.parse(raw) : raw;
  if (record && Array.isArray(record.items)) items.push(...record.items);
});
return { items };
