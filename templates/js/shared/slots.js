<# A sliding limit's slot (rate.py): the hash field of slot i holds "generation:time it is free
   again"; a claim on it is `<hash>:c<i>:<generation>`. #>
<% macro value(generation, free_at) %>`${<< generation >>}:${<< free_at >>}`<% endmacro %>
<% macro read(raw) %>String(<< raw >>).split(':')<% endmacro %>
<% macro claim(hash, slot, generation) %>`${<< hash >>}<< keys.claim >>${<< slot >>}:${<< generation >>}`<% endmacro %>
