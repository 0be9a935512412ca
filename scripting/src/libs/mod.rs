//! The libraries Redis 7.0 preloads into its Lua VM besides Lua's own `base`, `table`, `string`
//! and `math`: `bit` (LuaBitOp), `cjson`, `cmsgpack` and `struct`. Each is written here in Rust
//! against mlua, reproducing what the C libraries Redis bundles answer, and checked against
//! redis-server through EVAL.
