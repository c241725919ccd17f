<# A mutex's fast-path value (`fast`, keys.py): FAST_SCALE x the last ticket out, plus, while
   the next ticket holds, HELD_MARK and its entry time modulo HELD_WRAP_MS; each arrival's INCR
   adds 1. A release writes `released`, a holder `held`; read.js reads it with `decoder`. #>
<% macro released(ticket) %>String(<< ticket >> * << fast_scale >>)<% endmacro %>
<% macro held(ticket, now) %>String((<< ticket >> - 1) * << fast_scale >> + << held_mark >> + (<< now >> % << held_wrap_ms >>))<% endmacro %>
<% macro decoder() %>
// The fast-path value: the last ticket out, the arrivals counted since it was written, and
// whether (and when, within HELD_WRAP_MS of now) the next ticket entered.
const decodeFast = (value, now) => {
  const lastOut = Math.floor(value / << fast_scale >>);
  const rest = value - lastOut * << fast_scale >>;
  const wrap = << held_wrap_ms >>;
  const enteredAt = (ahead) => {
    const mod = (((rest - << held_mark >> - ahead) % wrap) + wrap) % wrap;
    return now - ((((now - mod) % wrap) + wrap) % wrap);
  };
  return { lastOut, entered: rest >= << held_mark >>, enteredAt };
};
<%- endmacro %>
