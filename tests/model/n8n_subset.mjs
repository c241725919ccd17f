// A mini n8n: runs the node types the lock engine uses, as n8n 1.x/2.x run them, one atomic
// step at a time, so that a scheduler (explore.mjs) can interleave executions.
//
// Node types: n8n-nodes-base.set (raw mode: `jsonOutput`), .if (v2: the first condition's
// `leftValue`, boolean operation "true", strict types), .switch (v3, expression mode),
// .splitOut, .redis (get / set / incr / push per input item, as packages/nodes-base/nodes/Redis:
// GET answers {[propertyName]: value ?? null} (key type list: LRANGE 0 -1, [] for no key), INCR
// {[key]: n}, SET and PUSH pass their item through; the SET type "automatic" or unset goes by
// the value's JS type, and key type list is LSET by index then EXPIRE), .wait (a time
// interval), .stopAndError.
// Node settings: `executeOnce` (only the first input item), `retryOnFail` / `maxTries` /
// `waitBetweenTries` (a failed node runs again from its first item). Expressions `={{ … }}`
// see `$()` (`.first()`, `.last()`, `.all()`, `.isExecuted`: the LAST run of that node,
// output 0, as WorkflowDataProxy does with no run index), `$json`, `$input`, `$execution.id`,
// `$workflow`, and a `Date`/`Math` whose `now()`/`random()` are the caller's clock and seed.
// Not modelled: If conditions other than "is true", Set modes other than raw, Redis
// operations other than get/set/incr/push (Push at the head, GET of hashes and sets), waits of
// 65 s or more.
//
// An execution is a generator (`Execution.run(group, items)`): it yields
//   { kind: 'step', node, what, item }  before each atomic step (an expression node, or one
//                                 item of a Redis node), which it takes when resumed;
//   { kind: 'wait', node, ms }    a Wait node: resume it `ms` later on the caller's clock;
// and returns { exit, items } (an exit of the group was reached), { end: 'refused', message }
// (a Stop and Error node ran), { end: 'error', message, node } (n8n would fail the execution)
// or { end: 'stopped' } (the branch ended without reaching an exit).

export class StopError extends Error {}
export class NodeError extends Error {}

const clone = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

// ---------------------------------------------------------------------------------------------
// Expressions

const compiled = new Map();

function compile(code) {
  let fn = compiled.get(code);
  if (!fn) {
    // n8n's expressions are JavaScript; `{{` / `}}` delimit them. A trailing line comment must
    // not swallow the closing parenthesis, hence the line break.
    fn = new Function('$', '$json', '$input', '$execution', '$workflow', '$runIndex', 'Date', 'Math', `return (${code}\n);`);
    compiled.set(code, fn);
  }
  return fn;
}

// `={{ x }}` alone keeps x's type; text around expressions makes a string.
export function isExpression(value) {
  return typeof value === 'string' && value.startsWith('=');
}

function resolveString(value, scope) {
  const text = value.slice(1);
  const parts = text.split(/\{\{([\s\S]*?)\}\}/);
  if (parts.length === 3 && parts[0].trim() === '' && parts[2].trim() === '') {
    return evaluate(parts[1], scope);
  }
  return parts.map((part, index) => {
    if (index % 2 === 0) return part;
    const result = evaluate(part, scope);
    if (result === null || result === undefined) return '';
    return typeof result === 'object' ? JSON.stringify(result) : String(result);
  }).join('');
}

function evaluate(code, scope) {
  return compile(code)(scope.$, scope.$json, scope.$input, scope.$execution, scope.$workflow, scope.$runIndex, scope.Date, scope.Math);
}

export function resolve(value, scope) {
  if (isExpression(value)) return resolveString(value, scope);
  if (Array.isArray(value)) return value.map((v) => resolve(v, scope));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, scope)]));
  }
  return value;
}

// A Date whose `now()` and `new Date()` read the caller's clock.
export function clockDate(now) {
  return class ModelDate extends Date {
    constructor(...args) {
      if (args.length === 0) super(now());
      else super(...args);
    }

    static now() {
      return now();
    }
  };
}

export function seededMath(random) {
  const math = Object.create(Math);
  math.random = random;
  return math;
}

// ---------------------------------------------------------------------------------------------
// The workflow: the nodes of every group, by name.

export class Workflow {
  constructor(groups, { id = 'wf-model', name = 'model workflow' } = {}) {
    this.id = id;
    this.name = name;
    this.nodes = new Map();
    this.connections = {};
    for (const group of groups) {
      for (const node of group.nodes) {
        if (this.nodes.has(node.name)) throw new Error(`duplicate node name ${node.name}`);
        this.nodes.set(node.name, node);
      }
      Object.assign(this.connections, group.connections);
    }
    for (const node of this.nodes.values()) {
      if (!HANDLERS[node.type]) throw new Error(`the model cannot run ${node.type} (${node.name})`);
    }
  }

  node(name) {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  // Targets of an output, in n8n v1 order: by the target's position (top, then left).
  targets(name, output) {
    const main = this.connections[name]?.main?.[output] ?? [];
    return [...main].sort((a, b) => {
      const pa = this.node(a.node).position;
      const pb = this.node(b.node).position;
      return pa[1] - pb[1] || pa[0] - pb[0];
    });
  }
}

// ---------------------------------------------------------------------------------------------
// One execution of the workflow.

export class Execution {
  // env: { executionId, now() (the caller's clock, ms), random(), redis (see explore.mjs),
  //        observe(event) (told of every step taken) }
  constructor(workflow, env) {
    this.workflow = workflow;
    this.env = env;
    this.runData = new Map(); // node name -> [ outputs: item[][] ]
    this.Date = clockDate(env.now);
    this.Math = seededMath(env.random);
  }

  // `node`: the node the expression belongs to ($runIndex: how many times it ran before).
  scope(item, input, node = null) {
    const execution = this;
    const $ = (name) => {
      if (!execution.workflow.nodes.has(name)) throw new NodeError(`Referenced node doesn't exist: ${name}`);
      const runs = () => {
        const all = execution.runData.get(name);
        if (!all) throw new NodeError(`Referenced node is unexecuted: ${name}`);
        return all[all.length - 1][0] ?? [];
      };
      return {
        get isExecuted() {
          return execution.runData.has(name);
        },
        first: () => runs()[0],
        last: () => { const items = runs(); return items[items.length - 1]; },
        all: () => runs(),
      };
    };
    return {
      $,
      $json: item ? item.json : {},
      $input: { first: () => input[0], last: () => input[input.length - 1], all: () => input },
      $execution: { id: this.env.executionId, resumeUrl: `model://resume/${this.env.executionId}` },
      $workflow: { id: this.workflow.id, name: this.workflow.name },
      $runIndex: node ? (this.runData.get(node.name) ?? []).length : 0,
      Date: this.Date,
      Math: this.Math,
    };
  }

  param(node, path, item, input, fallback) {
    let value = node.parameters;
    for (const part of path.split('.')) value = value === undefined ? undefined : value[part];
    if (value === undefined) return fallback;
    return resolve(value, this.scope(item, input, node));
  }

  record(name, outputs) {
    if (!this.runData.has(name)) this.runData.set(name, []);
    this.runData.get(name).push(outputs.map((items) => items.map((item) => ({ json: clone(item.json) }))));
  }

  // One node, with n8n's "Retry On Fail": a node that fails runs again from its first item
  // (maxTries clamped to 2..5, default 3; waitBetweenTries to 0..5000 ms, default 1000), and
  // the execution fails after the last try. Stop and Error is not retried (it would fail
  // again the same way).
  *runNode(node, input) {
    const retry = node.retryOnFail === true && node.type !== 'n8n-nodes-base.stopAndError';
    const tries = retry ? Math.min(5, Math.max(2, node.maxTries ?? 3)) : 1;
    const pause = retry ? Math.min(5000, Math.max(0, node.waitBetweenTries ?? 1000)) : 0;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return yield* HANDLERS[node.type](this, node, input);
      } catch (error) {
        if (error instanceof StopError || attempt >= tries) throw error;
        this.env.observe({ node: node.name, op: 'retry', value: `try ${attempt} failed: ${String(error.message ?? error).slice(0, 80)}` });
        if (pause > 0) yield { kind: 'wait', node: node.name, ms: pause };
      }
    }
  }

  // A fault the scheduler injects into the step being taken (explore.mjs): 'fail' (the node
  // fails before the step's effect: an expression timed out, a lost request) or 'after' (a
  // Redis command ran, then its answer was lost).
  fault(node, item) {
    const kind = this.env.fault ? this.env.fault(node.name, item) : null;
    if (kind === 'fail') throw Object.assign(new NodeError(`model fault: ${node.name} failed (item ${item})`), { node: node.name });
    return kind;
  }

  // Run a group from its entry with `items`, until one of its exits gives items.
  *run(group, items) {
    const exits = new Map();
    for (const [exit, ends] of Object.entries(group.exits)) {
      for (const [name, index] of ends) {
        if (this.workflow.targets(name, index).length) throw new Error(`exit ${name}:${index} is also connected`);
        exits.set(`${name}\u0000${index}`, exit);
      }
    }
    const stack = [{ name: group.entry, items }];
    let current = null;
    try {
      while (stack.length) {
        const { name, items: input } = stack.shift();
        current = name;
        const node = this.workflow.node(name);
        const outputs = yield* this.runNode(node, input);
        this.record(name, outputs);
        const next = [];
        for (let index = 0; index < outputs.length; index += 1) {
          const out = outputs[index];
          if (!out.length) continue; // n8n runs no node without input data
          const exit = exits.get(`${name}\u0000${index}`);
          if (exit) return { exit, items: out, node: name };
          for (const target of this.workflow.targets(name, index)) {
            if (target.index !== 0) throw new Error(`${name} feeds input ${target.index} of ${target.node}`);
            next.push({ name: target.node, items: out });
          }
        }
        stack.unshift(...next); // v1: a node's children run before the rest, each to its end
      }
    } catch (error) {
      const node = (error && error.node) || current;
      if (error instanceof StopError) return { end: 'refused', message: error.message, node };
      return { end: 'error', message: String(error && error.stack ? error.stack : error), node };
    }
    return { end: 'stopped' };
  }
}

function failing(node, fn) {
  try {
    return fn();
  } catch (error) {
    if (error && typeof error === 'object' && !error.node) error.node = node.name;
    throw error;
  }
}

const onceOrAll = (node, input) => (node.executeOnce ? input.slice(0, 1) : input);

// ---------------------------------------------------------------------------------------------
// Node types

function* setNode(execution, node, input) {
  if (node.parameters.mode !== 'raw') throw new Error(`${node.name}: only raw mode is modelled`);
  const out = [];
  for (const item of onceOrAll(node, input)) {
    yield { kind: 'step', node: node.name, what: 'set', item: 0 };
    execution.fault(node, 0);
    const value = failing(node, () => execution.param(node, 'jsonOutput', item, input));
    const json = typeof value === 'string' ? JSON.parse(value) : value;
    if (!json || typeof json !== 'object' || Array.isArray(json)) {
      throw Object.assign(new NodeError(`${node.name}: jsonOutput is not an object: ${JSON.stringify(value)}`), { node: node.name });
    }
    out.push({ json: clone(json) });
    execution.env.observe({ node: node.name, op: 'expr', value: out[out.length - 1].json });
  }
  return [out];
}

function* ifNode(execution, node, input) {
  const conditions = node.parameters.conditions;
  if (conditions.conditions.length !== 1) throw new Error(`${node.name}: one condition only`);
  const condition = conditions.conditions[0];
  const op = condition.operator;
  if (op.type !== 'boolean' || op.operation !== 'true') throw new Error(`${node.name}: only "is true" is modelled`);
  const yes = [];
  const no = [];
  for (const item of onceOrAll(node, input)) {
    yield { kind: 'step', node: node.name, what: 'if', item: 0 };
    execution.fault(node, 0);
    const left = failing(node, () => resolve(condition.leftValue, execution.scope(item, input, node)));
    // Strict type validation lets null/undefined through (they are not true); any other
    // non-boolean fails the node.
    if (left !== null && left !== undefined && typeof left !== 'boolean') {
      throw Object.assign(new NodeError(`${node.name}: Wrong type: '${JSON.stringify(left)}' is not a boolean`), { node: node.name });
    }
    (left === true ? yes : no).push(item);
    execution.env.observe({ node: node.name, op: 'if', value: left });
  }
  return [yes, no];
}

// Switch v3 in expression mode: the expression gives each item's output, 0..numberOutputs-1
// (n8n fails the node for any other).
function* switchNode(execution, node, input) {
  if (node.parameters.mode !== 'expression') throw new Error(`${node.name}: only expression mode is modelled`);
  const count = node.parameters.numberOutputs;
  const outputs = Array.from({ length: count }, () => []);
  for (const item of onceOrAll(node, input)) {
    yield { kind: 'step', node: node.name, what: 'switch', item: 0 };
    execution.fault(node, 0);
    const index = failing(node, () => resolve(node.parameters.output, execution.scope(item, input, node)));
    if (!Number.isInteger(index) || index < 0 || index >= count) {
      throw Object.assign(new NodeError(`${node.name}: The output ${index} is not allowed`), { node: node.name });
    }
    outputs[index].push(item);
    execution.env.observe({ node: node.name, op: 'switch', value: index });
  }
  return outputs;
}

function* splitOutNode(execution, node, input) {
  const field = node.parameters.fieldToSplitOut;
  const out = [];
  yield { kind: 'step', node: node.name, what: 'split' };
  for (const item of input) {
    const value = item.json[field];
    if (value === undefined) throw Object.assign(new NodeError(`${node.name}: The field '${field}' wasn't found`), { node: node.name });
    for (const element of Array.isArray(value) ? value : [value]) {
      out.push({ json: element && typeof element === 'object' && !Array.isArray(element) ? clone(element) : { [field]: element } });
    }
  }
  return [out];
}

function* redisNode(execution, node, input) {
  const operation = node.parameters.operation;
  const redis = execution.env.redis;
  const out = [];
  for (const [index, item] of onceOrAll(node, input).entries()) {
    yield { kind: 'step', node: node.name, what: operation, item: index };
    const lostAnswer = execution.fault(node, index) === 'after';
    const p = (name, fallback) => failing(node, () => execution.param(node, name, item, input, fallback));
    if (operation === 'get') {
      const property = p('propertyName');
      const key = p('key');
      const keyType = p('keyType');
      const dotNotation = p('options.dotNotation', true);
      if (keyType !== 'string' && keyType !== 'list') throw new Error(`${node.name}: only GET of strings and lists is modelled`);
      if (dotNotation !== false && property.includes('.')) throw new Error(`${node.name}: dot notation is not modelled`);
      const value = keyType === 'list' ? redis.lrange(key) : redis.get(key) ?? null;
      out.push({ json: { [property]: value } });
      execution.env.observe({ node: node.name, op: keyType === 'list' ? 'LRANGE' : 'GET', key, value });
    } else if (operation === 'push') {
      // RPUSH with Tail on (LPUSH otherwise, not modelled); the item passes through.
      const list = p('list');
      const data = p('messageData');
      if (p('tail', false) !== true) throw new Error(`${node.name}: only Push with Tail (RPUSH) is modelled`);
      // node-redis sends only strings: n8n 2.41.1 fails a Push of a number "Invalid argument type".
      if (typeof data !== 'string') throw Object.assign(new NodeError(`${node.name}: Invalid argument type (${typeof data})`), { node: node.name });
      const length = redis.rpush(list, data);
      out.push({ json: clone(item.json) });
      execution.env.observe({ node: node.name, op: 'RPUSH', key: list, value: data, length });
    } else if (operation === 'incr') {
      const key = p('key');
      const expire = p('expire', false);
      const ttl = p('ttl', -1);
      const value = redis.incr(key, expire && ttl > 0 ? ttl : null);
      out.push({ json: { [key]: value } });
      execution.env.observe({ node: node.name, op: 'INCR', key, value });
    } else if (operation === 'set') {
      const key = p('key');
      const value = p('value');
      let type = p('keyType');
      const valueIsJSON = p('valueIsJSON', true);
      const expire = p('expire', false);
      const ttl = p('ttl', -1);
      if (type === undefined || type === 'automatic') {
        if (typeof value === 'string') type = 'string';
        else if (Array.isArray(value)) type = 'list';
        else if (value && typeof value === 'object') type = 'hash';
        else throw Object.assign(new NodeError(`${node.name}: Could not identify the type to set. Please set it manually!`), { node: node.name });
      }
      if (type === 'string') {
        if (value === null || value === undefined) throw Object.assign(new NodeError(`${node.name}: value.toString() of ${value}`), { node: node.name });
        redis.set(key, value.toString(), expire ? ttl : null);
      } else if (type === 'hash') {
        let fields = value;
        if (valueIsJSON && typeof value === 'string') {
          try { fields = JSON.parse(value); } catch { fields = value; }
        }
        redis.hset(key, fields, expire ? ttl : null);
      } else if (type === 'list') {
        // utils.setValue: LSET of each element of the value by its index (a string's
        // characters), then EXPIRE; so an empty value is an EXPIRE alone.
        for (let index = 0; index < value.length; index += 1) redis.lset(key, index, value[index]);
        if (expire) redis.expire(key, ttl);
      } else {
        throw new Error(`${node.name}: SET of type ${JSON.stringify(type)} is not modelled`);
      }
      out.push({ json: clone(item.json) });
      execution.env.observe({ node: node.name, op: { hash: 'HSET', list: 'LSET' }[type] ?? 'SET', key, value, ttl: expire ? ttl : null });
    } else {
      throw new Error(`${node.name}: Redis ${operation} is not modelled`);
    }
    if (lostAnswer) throw Object.assign(new NodeError(`model fault: ${node.name} lost the answer of item ${index}`), { node: node.name });
  }
  return [out];
}

// A Wait "On Webhook Call" parks the execution: it yields { kind: 'park', node, ms } (ms: its
// "Limit Wait Time") and the scheduler resumes it with the body a resume POSTed (n8n's output
// item: { headers, params, query, body }), or with nothing when the limit ran out (its input
// items pass through).
function* parkNode(execution, node, input) {
  const item = input[0];
  const amount = failing(node, () => execution.param(node, 'resumeAmount', item, input, 1));
  const unit = execution.param(node, 'resumeUnit', item, input, 'hours');
  const factor = { seconds: 1000, minutes: 60_000, hours: 3_600_000, days: 86_400_000 }[unit];
  const ms = Number(amount) * factor;
  if (node.parameters.limitWaitTime !== true || !Number.isFinite(ms) || ms <= 0) {
    throw Object.assign(new NodeError(`${node.name}: a park needs a limit (got ${amount} ${unit})`), { node: node.name });
  }
  execution.env.observe({ node: node.name, op: 'park', value: ms });
  const resumed = yield { kind: 'park', node: node.name, ms };
  if (resumed === undefined || resumed === null) return [input];
  return [[{ json: { headers: {}, params: {}, query: {}, body: resumed } }]];
}

function* waitNode(execution, node, input) {
  if (node.parameters.resume === 'webhook') return yield* parkNode(execution, node, input);
  if (node.parameters.resume !== 'timeInterval') throw new Error(`${node.name}: only time intervals and webhooks are modelled`);
  const item = input[0];
  const amount = failing(node, () => execution.param(node, 'amount', item, input, 1));
  const unit = execution.param(node, 'unit', item, input, 'hours');
  const factor = { seconds: 1000, minutes: 60_000, hours: 3_600_000, days: 86_400_000 }[unit];
  const ms = Number(amount) * factor;
  if (!Number.isFinite(ms) || ms < 0) throw Object.assign(new NodeError(`${node.name}: bad amount ${amount}`), { node: node.name });
  if (ms >= 65_000) throw new Error(`${node.name}: waits of 65 s and more (saved to the database) are not modelled`);
  execution.env.observe({ node: node.name, op: 'wait', value: ms });
  yield { kind: 'wait', node: node.name, ms };
  return [input];
}

// An HTTP Request that POSTs a JSON body (one step): only resumes of parked executions are
// modelled (`model://resume/<id>`, env.resume answers as n8n's /webhook-waiting would). Its
// item is the full response ({ statusCode, body }), as with "Never Error" and "Full Response".
function* httpRequestNode(execution, node, input) {
  const item = input[0];
  yield { kind: 'step', node: node.name, what: 'http' };
  try {
    execution.fault(node, 0);
  } catch (error) { // "On Error: Continue": the error is the node's item
    return [[{ json: { error: String(error.message ?? error) } }]];
  }
  const url = failing(node, () => execution.param(node, 'url', item, input));
  const raw = failing(node, () => execution.param(node, 'jsonBody', item, input, '{}'));
  const body = typeof raw === 'string' ? JSON.parse(raw) : raw;
  if (!String(url).startsWith('model://resume/')) throw new Error(`${node.name}: only resumes are modelled, got ${url}`);
  const statusCode = execution.env.resume(String(url).slice('model://resume/'.length), body);
  execution.env.observe({ node: node.name, op: 'resume', key: String(url), value: statusCode });
  return [[{ json: { statusCode, body: statusCode === 200 ? { message: 'Workflow was started' } : {} } }]];
}

function* stopAndErrorNode(execution, node, input) {
  yield { kind: 'step', node: node.name, what: 'stop' };
  const message = failing(node, () => execution.param(node, 'errorMessage', input[0], input));
  execution.env.observe({ node: node.name, op: 'stop', value: message });
  throw Object.assign(new StopError(message), { node: node.name });
}

const HANDLERS = {
  'n8n-nodes-base.set': setNode,
  'n8n-nodes-base.if': ifNode,
  'n8n-nodes-base.switch': switchNode,
  'n8n-nodes-base.splitOut': splitOutNode,
  'n8n-nodes-base.redis': redisNode,
  'n8n-nodes-base.wait': waitNode,
  'n8n-nodes-base.httpRequest': httpRequestNode,
  'n8n-nodes-base.stopAndError': stopAndErrorNode,
};
