<# The lock's records (`holder:<t>`, the lane's copy `meta:<k>`, a duplicate guard's done mark),
   as every script that reads one reads it. #>
<% macro reader() %>
// A record as Redis gave it (a string of JSON, or the object n8n's Redis node parsed): null
// when the key is absent; an unreadable one is someone's, reported and never released.
const parse = (raw) => {
  if (raw === null || raw === undefined || raw === '') return null;
  try {
    const record = typeof raw === 'string' ? JSON.parse(raw) : raw;
    if (record && typeof record === 'object') return record;
  } catch (error) {
    // not JSON
  }
  return { lock_id: String(raw), workflow_name: 'unknown (unreadable record)', unreadable: true };
};
<%- endmacro %>
<% macro released(ticket, lock_id, at, extra='') %>JSON.stringify({ released: true, ticket: << ticket >>, lock_id: << lock_id >>, released_at: << at >><< extra >> })<% endmacro %>
<# The execution's cleanup index (`index:<workflow>:<execution>`, a hash): one entry per scope
   it holds, which the cleanup handler reads to find the lock's record. #>
<% macro index_entry(lock_id, ticket, slots) %>JSON.stringify({ lock_id: << lock_id >>, ticket: << ticket >>, slots: << slots >>, format: << format >> })<% endmacro %>
