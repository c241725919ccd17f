<# A mutex's fast-path value (keys.py): FAST_SCALE x the last ticket out, plus, while the next
   ticket holds, HELD_MARK and its entry time modulo HELD_WRAP_MS; each arrival's INCR adds 1. #>
<% macro released(ticket) %>String(<< ticket >> * << fast_scale >>)<% endmacro %>
<% macro held(ticket, now) %>String((<< ticket >> - 1) * << fast_scale >> + << held_mark >> + (<< now >> % << held_wrap_ms >>))<% endmacro %>
<% macro last_out(value) %>Math.floor(<< value >> / << fast_scale >>)<% endmacro %>
