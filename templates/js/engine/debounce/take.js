// Every waiter that cuts burst s INCRs the key's counter (Debounce Cut) and pushes what it drew
// onto `cuts:<s>`; the list's first entry c is THE cut, for this waiter, for one that cut too
// (a take-over), and for one that comes back after a stall or finishes the cut of a runner that
// died. (A drawn ticket that is not the cut is a hole: nobody stores or claims it.) The burst is
// the tickets s .. c-1: push "r" onto each one's claims list; an event that has not pushed its
// "e" yet is left out and draws again. The cut is pushed onto `cuts:<s>` once more (after the
// first entry it changes nothing), so that the list is never empty and the chain goes on for a
// burst that holds no ticket.
const w = << decision >>;
const cuts = << cuts >>;
const c = Number(Array.isArray(cuts) ? cuts[0] : NaN);
const mine = c === Number(<< drawn >>[w.seq_key]);
const tickets = [];
for (let t = w.s; t < c; t += 1) tickets.push(t);
return {
  c,
  mine,
  tickets,
  push: [
    ...tickets.map((t) => ({ list: `${w.base}<< keys.event_claim >>${t}`, mark: 'r' })),
    { list: `${w.base}<< keys.cut_of >>${w.s}`, mark: String(c) },
  ],
};
