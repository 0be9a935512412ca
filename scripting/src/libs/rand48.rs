//! `math.random` and `math.randomseed` as Redis replaces them: Lua 5.1's functions drawing from
//! Redis's own rand48 generator (`redisLrand48`/`redisSrand48`, a 48-bit linear congruential
//! generator with the classic `lrand48` constants) instead of libc's `rand()`. Redis reseeds it
//! with 0 before every EVAL, so a script's "random" numbers are the same at every call and
//! replicate deterministically; [`reset`] does that reseeding. The state lives in the VM's app
//! data, so each VM has its own generator (Redis has one per process, which is the same thing
//! for its single VM).

use std::cell::Cell;

use mlua::{Lua, MultiValue, Table, Value};

use super::{check_integer, function, msg, Fail, LResult};

const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK48: u64 = (1 << 48) - 1;
/// `REDIS_LRAND48_MAX`.
const LRAND48_MAX: i32 = i32::MAX;

/// The 48-bit generator state.
struct Rand48(Cell<u64>);

impl Rand48 {
    fn seeded(seed: i32) -> Self {
        Rand48(Cell::new(Self::state_for(seed)))
    }

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
        lua.set_app_data(Rand48::seeded(0));
    }
    let st = lua.app_data_ref::<Rand48>().expect("rand48 state just set");
    f(&st)
}

/// Reseeds the generator with 0, as Redis does before running each script.
pub fn reset(lua: &Lua) {
    with_state(lua, |s| s.0.set(Rand48::state_for(0)));
}

/// Replaces `math.random` and `math.randomseed` in `math` with Redis's versions.
pub fn install(lua: &Lua, math: &Table) -> mlua::Result<()> {
    reset(lua);
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
                return Err(Fail::Arg(1, "interval is empty".into()));
            }
            (r * u as f64).floor() + 1.0
        }
        2 => {
            let l = check_int(lua, &args, 1)?;
            let u = check_int(lua, &args, 2)?;
            if l > u {
                return Err(Fail::Arg(2, "interval is empty".into()));
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
