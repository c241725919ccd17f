// The INCRs Debounce Read Plan planned, after the reads (only expressions follow, up to the body).
const plan = << plan >>;
return { incr: plan.incr };
