// Runs Redis Push / Get (key type list) / Set (key type list, Expire) nodes through the mini n8n
// as n8n 2.41.1 and 1.123.81 ran them (docs/debounce.md, "Why INCR cannot close the cut gap"),
// and prints what each node answered and what the simulated Redis holds: for
// tests/unit/test_model_lists.py.
import { Workflow, Execution } from './n8n_subset.mjs';
import { Redis } from './core.mjs';

const redisNode = (name, parameters, x) => ({
  name, type: 'n8n-nodes-base.redis', typeVersion: 1, position: [x, 0], parameters,
});
const nodes = [
  redisNode('Push', { operation: 'push', list: '={{ $json.list }}', messageData: '={{ $json.mark }}', tail: true }, 0),
  redisNode('Read', { operation: 'get', propertyName: 'marks', key: '={{ $json.list }}', keyType: 'list', options: { dotNotation: false } }, 200),
  redisNode('Expire', { operation: 'set', key: '={{ $("Push").all()[0].json.list }}', value: "={{ '' }}", keyType: 'list', expire: true, ttl: 100 }, 400),
];
const connections = {
  Push: { main: [[{ node: 'Read', type: 'main', index: 0 }]] },
  Read: { main: [[{ node: 'Expire', type: 'main', index: 0 }]] },
};
const group = { nodes, connections, entry: 'Push', exits: { done: [['Expire', 0]] } };
let now = 1_000_000;
const redis = new Redis(() => now);
const run = (mark) => {
  const execution = new Execution(new Workflow([group]), {
    executionId: mark, now: () => now, random: Math.random, redis, observe: () => {}, resume: () => 404,
  });
  const gen = execution.run(group, [{ json: { list: 'marks:1', mark } }]);
  let r = gen.next();
  while (!r.done) r = gen.next();
  return r.value;
};
const first = run('e');
const second = run('r');
const entry = redis.entry('marks:1');
console.log(JSON.stringify({
  first: first.items.map((i) => i.json),
  second: second.items.map((i) => i.json),
  held: entry.value,
  ttl_s: (entry.expiresAt - now) / 1000,
}));
