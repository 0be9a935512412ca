//! `math.random` and `math.randomseed` as Redis replaces them: Lua 5.1's functions drawing from
//! Redis's own rand48 generator (`redisLrand48`/`redisSrand48`, a 48-bit linear congruential
//! generator with the classic `lrand48` constants) instead of libc's `rand()`.
//!
//! Observed on redis-server 7.0.15: the generator is *not* reseeded before each EVAL — a fresh
//! server's first three `math.random()` are 0.39646477363839, 0.84048536971234 and
//! 0.35333609737146 whichever scripts draw them, the sequence simply continues from script to
//! script, and SCRIPT FLUSH does not restart it. The state starts at the C static initialiser
//! ([`INITIAL_STATE`]) and `math.randomseed(n)` sets it to `n`'s 32 bits above 0x330E. Here the
//! state lives in the VM's app data; [`state`]/[`set_state`] let the engine carry it over when
//! it replaces the VM (Redis's is one per process), and [`reset`] goes back to the start.

use std::cell::Cell;

use mlua::{Lua, MultiValue, Table, Value};

use super::{arg, check_integer, function, msg, LResult};

const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK48: u64 = (1 << 48) - 1;
/// `REDIS_LRAND48_MAX`.
const LRAND48_MAX: i32 = i32::MAX;

/// The 48-bit generator state.
struct Rand48(Cell<u64>);

/// The generator's state before any seeding: `{0x330E, 0xABCD, 0x1234}` in rand.c.
pub const INITIAL_STATE: u64 = 0x1234_ABCD_330E;

impl Rand48 {
    /// `redisSrand48`: the seed's 32 bits above the fixed low word 0x330E.
    fn state_for(seed: i32) -> u64 {
        ((seed as u32 as u64) << 16) | 0x330E
    }

    /// `redisLrand48`: advance, and return the state's top 31 bits.
    fn next(&self) -> i32 {
        let x = (A.wrapping_mul(self.0.get()).wrapping_add(C)) & MASK48;
        self.0.set(x);
        (x >> 17) as i32
    }
}

fn with_state<R>(lua: &Lua, f: impl FnOnce(&Rand48) -> R) -> R {
    if lua.app_data_ref::<Rand48>().is_none() {
        lua.set_app_data(Rand48(Cell::new(INITIAL_STATE)));
    }
    let st = lua.app_data_ref::<Rand48>().expect("rand48 state just set");
    f(&st)
}

/// Puts the generator back in its initial state (that of a freshly started redis-server).
pub fn reset(lua: &Lua) {
    set_state(lua, INITIAL_STATE);
}

/// The generator's 48-bit state.
pub fn state(lua: &Lua) -> u64 {
    with_state(lua, |s| s.0.get())
}

/// Sets the generator's state (its low 48 bits).
pub fn set_state(lua: &Lua, state: u64) {
    with_state(lua, |s| s.0.set(state & MASK48));
}

/// Replaces `math.random` and `math.randomseed` in `math` with Redis's versions. The state is
/// left as it is if the VM already has one, else it starts at [`INITIAL_STATE`].
pub fn install(lua: &Lua, math: &Table) -> mlua::Result<()> {
    with_state(lua, |_| ());
    math.set("random", function(lua, random)?)?;
    math.set("randomseed", function(lua, randomseed)?)?;
    Ok(())
}

/// `luaL_checkint`: the integer truncated to C's `int`.
fn check_int(lua: &Lua, args: &[Value], n: usize) -> LResult<i32> {
    Ok(check_integer(lua, args, n)? as i32)
}

fn random(lua: &Lua, a: MultiValue) -> LResult<MultiValue> {
    let args = a.into_vec();
    // The `%` keeps r below 1, as in Lua's own math.random.
    let r = with_state(lua, |s| s.next() % LRAND48_MAX) as f64 / LRAND48_MAX as f64;
    let v = match args.len() {
        0 => r,
        1 => {
            let u = check_int(lua, &args, 1)?;
            if u < 1 {
                return Err(arg(1, "interval is empty"));
            }
            (r * u as f64).floor() + 1.0
        }
        2 => {
            let l = check_int(lua, &args, 1)?;
            let u = check_int(lua, &args, 2)?;
            if l > u {
                return Err(arg(2, "interval is empty"));
            }
            // `u-l+1` is C int arithmetic: it wraps for the full 32-bit range.
            let span = u.wrapping_sub(l).wrapping_add(1);
            (r * span as f64).floor() + l as f64
        }
        _ => return Err(msg("wrong number of arguments")),
    };
    Ok(MultiValue::from_vec(vec![Value::Number(v)]))
}

fn randomseed(lua: &Lua, a: MultiValue) -> LResult<MultiValue> {
    let seed = check_int(lua, &a.into_vec(), 1)?;
    with_state(lua, |s| s.0.set(Rand48::state_for(seed)));
    Ok(MultiValue::new())
}
