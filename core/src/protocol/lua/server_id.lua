-- The server's identity: the run_id of INFO server (random per server start, Redis and
-- Valkey), so that a quorum's nodes can be told apart when only scripts reach them (the wasm
-- entry's host transports). No keys, no arguments; writes nothing.
-- Reply: the run_id, or nil when INFO has none.
return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
