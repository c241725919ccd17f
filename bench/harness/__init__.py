"""What every benchmark shares, one idea a module:

- `session`: the test bed a bench runs on (n8n, its Redis, a temporary folder) and `Span`, how
  long a part of the run took and how loaded the machine was;
- `workspace`: the bench workflow, an n8nlock workspace on the test bed, wrapping with this
  checkout's n8nlock or another tree's, and the push;
- `calls`: webhook calls with their timings: one, a burst at once, rounds of every workflow;
- `executions`: saved executions from n8n's public API; `runs`: what their nodes ran, per-node
  costs and the figures of one call;
- `stats`: percentiles, medians, bootstrap intervals, the ratio to the floor;
- `results`: the command that produced a result, the markdown and JSON written under
  bench/results, progress lines.
"""
