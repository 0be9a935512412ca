//! Lifting a script VM's memory limit while Rust builds Lua values on the script's behalf. Both
//! the sandbox (KEYS and ARGV) and the bridge (`redis.call`'s arguments and replies) do it, so it
//! sits below both.

use mlua::Lua;

/// Runs `f`, which builds or reads Lua values from Rust, with the VM's memory limit lifted.
///
/// While a limit is set, mlua cannot assume an allocation succeeds, so it runs every API call
/// that may allocate (each string, table, table write — even a `raw_get` by a string key) inside
/// a `lua_pcall` of two freshly allocated C closures. Building KEYS and ARGV and converting
/// `redis.call`'s arguments and replies that way was about a third of an EVALSHA's CPU. What
/// Rust builds here is bounded by a request or a reply the server already holds; the limit keeps
/// applying to everything the script's own code allocates. (mlua lifts the limit the same way
/// for its own closures.) Nested calls are fine: the inner one finds no limit to lift.
pub(crate) fn unlimited<R>(lua: &Lua, f: impl FnOnce() -> R) -> R {
    /// Puts the limit back even if `f` unwinds (a panic in a callback).
    struct Restore<'a>(&'a Lua, usize);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            if self.1 > 0 {
                let _ = self.0.set_memory_limit(self.1);
            }
        }
    }
    let limit = lua.set_memory_limit(0).unwrap_or(0);
    let _restore = Restore(lua, limit);
    f()
}
