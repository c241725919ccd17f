// The burst's items for the body: every taken event's items, in ticket (arrival) order.
const read = << read >>;
const items = [];
read.forEach((item) => {
  const record = typeof item.json.record === 'string' ? JSON.parse(item.json.record) : item.json.record;
  if (record && Array.isArray(record.items)) items.push(...record.items);
});
return { items };
