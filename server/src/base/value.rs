//! The values stored under keys, with the string encodings Redis reports.
//!
//! Redis keeps a string in one of three encodings, visible through OBJECT ENCODING and relied on
//! by users who size their memory: `int` (the string is a canonical 64-bit integer of at most 20
//! characters, stored as the number), `embstr` (up to 44 bytes, stored with the object header) and
//! `raw` (longer strings, and any string modified in place by APPEND, SETRANGE or SETBIT). We
//! store `int` as an `i64`, immutable strings as [`SmallBytes`] (inline up to 23 bytes) and
//! in-place-modified strings as a growable buffer, so that a loop of APPENDs is amortised O(1);
//! the encoding name follows Redis's rules, not our storage.
//!
//! [`Object`] adds what Redis keeps in every object header: 24 bits of access clock and a flag
//! saying whether the key has a TTL (so deleting a key without one never touches the expiry
//! index). The 24 bits mean what the eviction policy says, as in Redis: under an LRU (or any
//! non-LFU) policy the LRU clock of the last access in seconds (OBJECT IDLETIME); under an LFU
//! policy 16 bits of minutes (the last decrement time) and an 8-bit logarithmic access counter
//! (OBJECT FREQ). [`AccessClock`] is the policy's view of those bits: how a new object starts
//! and what an access does to it. Switching policy reinterprets the bits without converting
//! them, which is why Redis's OBJECT errors warn that the data takes time to adjust.

use embedis_datatypes::hash::HashValue;
use embedis_datatypes::hll::Hll;
use embedis_datatypes::quicklist::Quicklist;
use embedis_datatypes::set::SetValue;
use embedis_datatypes::stream::Stream;
use embedis_datatypes::vset::VectorSet;
use embedis_datatypes::zset::ZSetValue;
use embedis_datatypes::SmallBytes;
use embedis_protocol::number::parse_i64;
use std::borrow::Cow;

/// Longest string Redis stores as `embstr`.
pub const EMBSTR_MAX: usize = 44;
/// Longest string Redis considers for the `int` encoding.
const INT_ENCODING_MAX_LEN: usize = 20;

/// A value held by a key. The collections keep their compact forms inline (16 bytes) so that a
/// small hash or set costs one allocation besides its key.
#[derive(Clone, Debug)]
pub enum Value {
    /// A string that is a canonical integer: OBJECT ENCODING `int`.
    Int(i64),
    /// An immutable string: `embstr` up to 44 bytes, `raw` beyond.
    Str(SmallBytes),
    /// A string modified in place (APPEND, SETRANGE, SETBIT): always `raw`.
    Raw(Box<Vec<u8>>),
    /// A string that the HyperLogLog commands have worked on: exactly Redis's bytes (what GET
    /// returns), plus what makes PFCOUNT fast. Always `raw`, like every HLL Redis writes; any
    /// other string command that modifies it turns it back into [`Value::Raw`].
    Hll(Box<Hll>),
    List(Quicklist),
    Hash(HashValue),
    Set(SetValue),
    ZSet(ZSetValue),
    /// A stream, boxed: its header (counters and groups) is bigger than the other variants.
    Stream(Box<Stream>),
    /// A vector set (Redis 8.2's `vectorset`, a module type in Redis: OBJECT ENCODING `raw`).
    VectorSet(Box<VectorSet>),
}

/// The type names TYPE and SCAN TYPE use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    String,
    List,
    Hash,
    Set,
    ZSet,
    Stream,
    VectorSet,
}

impl ValueType {
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::List => "list",
            ValueType::Hash => "hash",
            ValueType::Set => "set",
            ValueType::ZSet => "zset",
            ValueType::Stream => "stream",
            ValueType::VectorSet => "vectorset",
        }
    }
}

impl Value {
    /// Where the value's first heap block starts (or the value itself, when it has none): what
    /// a pipeline's prefetch asks the CPU for before the command that reads it runs.
    #[inline]
    pub fn heap_address(&self) -> *const u8 {
        match self {
            Value::Int(n) => (n as *const i64).cast(),
            Value::Str(s) => s.heap_address(),
            Value::Raw(bytes) => bytes.as_ptr(),
            Value::Hll(hll) => (&**hll as *const Hll).cast(),
            Value::List(list) => list.heap_address(),
            Value::Hash(hash) => hash.heap_address(),
            Value::Set(set) => set.heap_address(),
            Value::ZSet(zset) => zset.heap_address(),
            Value::Stream(stream) => (&**stream as *const Stream).cast(),
            Value::VectorSet(vset) => (&**vset as *const VectorSet).cast(),
        }
    }

    /// A string value as Redis's `tryObjectEncoding` stores it: `int` when possible.
    pub fn string(bytes: &[u8]) -> Value {
        if bytes.len() <= INT_ENCODING_MAX_LEN {
            if let Some(n) = parse_i64(bytes) {
                return Value::Int(n);
            }
        }
        Value::Str(SmallBytes::new(bytes))
    }

    /// A string value that is never integer-encoded (Redis's plain `createStringObject`, used by
    /// INCRBYFLOAT and others).
    pub fn plain_string(bytes: &[u8]) -> Value {
        Value::Str(SmallBytes::new(bytes))
    }

    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Int(_) | Value::Str(_) | Value::Raw(_) | Value::Hll(_) => ValueType::String,
            Value::List(_) => ValueType::List,
            Value::Hash(_) => ValueType::Hash,
            Value::Set(_) => ValueType::Set,
            Value::ZSet(_) => ValueType::ZSet,
            Value::Stream(_) => ValueType::Stream,
            Value::VectorSet(_) => ValueType::VectorSet,
        }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Str(s) if s.len() <= EMBSTR_MAX => "embstr",
            Value::Str(_) | Value::Raw(_) | Value::Hll(_) => "raw",
            Value::List(l) => l.encoding_name(),
            Value::Hash(h) => h.encoding_name(),
            Value::Set(s) => s.encoding_name(),
            Value::ZSet(z) => z.encoding_name(),
            Value::Stream(_) => "stream",
            Value::VectorSet(_) => "raw",
        }
    }

    pub fn is_string(&self) -> bool {
        matches!(
            self,
            Value::Int(_) | Value::Str(_) | Value::Raw(_) | Value::Hll(_)
        )
    }

    /// The bytes of a string value (formatted for `int`); `None` for other types.
    pub fn string_bytes(&self) -> Option<Cow<'_, [u8]>> {
        match self {
            Value::Int(n) => Some(Cow::Owned(
                itoa::Buffer::new().format(*n).as_bytes().to_vec(),
            )),
            Value::Str(s) => Some(Cow::Borrowed(s.as_slice())),
            Value::Raw(v) => Some(Cow::Borrowed(v.as_slice())),
            Value::Hll(h) => Some(Cow::Borrowed(h.as_bytes())),
            _ => None,
        }
    }

    /// Length in bytes of a string value.
    pub fn string_len(&self) -> Option<usize> {
        match self {
            Value::Int(n) => Some(itoa::Buffer::new().format(*n).len()),
            Value::Str(s) => Some(s.len()),
            Value::Raw(v) => Some(v.len()),
            Value::Hll(h) => Some(h.len()),
            _ => None,
        }
    }

    /// Turns a string value into the in-place-modifiable `raw` form and returns its buffer.
    pub fn make_raw(&mut self) -> Option<&mut Vec<u8>> {
        if !self.is_string() {
            return None;
        }
        if let Value::Hll(hll) = self {
            let bytes = std::mem::take(hll.as_mut()).into_bytes();
            *self = Value::Raw(Box::new(bytes));
        } else if !matches!(self, Value::Raw(_)) {
            let bytes = self.string_bytes().expect("string").into_owned();
            *self = Value::Raw(Box::new(bytes));
        }
        match self {
            Value::Raw(v) => Some(v),
            _ => unreachable!("converted above"),
        }
    }
}

/// Redis's LRU clock: seconds, 24 bits, wrapping (about 194 days).
pub const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;
const HAS_EXPIRE: u32 = 1 << 31;
/// The value is a private copy of a small integer (COPY duplicates objects; see [`Object::refcount`]).
const PRIVATE_INT: u32 = 1 << 30;
/// The background snapshot's mark: the object was written to (or born after) the snapshot
/// whose parity it equals (see [`crate::model::snapshot`]).
const SNAPSHOT_MARK: u32 = 1 << 29;
/// Redis shares one object per integer in `0..SHARED_INTEGERS` between all keys holding it.
pub const SHARED_INTEGERS: i64 = 10_000;
/// The reference count Redis reports for a shared object (`OBJ_SHARED_REFCOUNT`, INT_MAX).
pub const SHARED_REFCOUNT: i64 = i32::MAX as i64;

/// What the keyspace stores per key: the value plus the object header fields we need.
#[derive(Clone, Debug)]
pub struct Object {
    pub value: Value,
    /// Bits 0..24: LRU clock of the last access; bit 30: private small integer; bit 31: the key
    /// has a TTL.
    meta: u32,
    /// Where INFO keysizes counts the object (`crate::model::keysizes`): its type and size
    /// bin when last counted, 0 if uncounted. In the header's padding: the object stays 32
    /// bytes.
    pub(crate) keysize: u16,
}

impl Object {
    pub fn new(value: Value, lru: u32) -> Self {
        Object {
            value,
            meta: lru & LRU_CLOCK_MAX,
            keysize: 0,
        }
    }

    pub fn lru(&self) -> u32 {
        self.meta & LRU_CLOCK_MAX
    }

    pub fn touch(&mut self, lru: u32) {
        self.meta = (self.meta & !LRU_CLOCK_MAX) | (lru & LRU_CLOCK_MAX);
    }

    pub fn has_expire(&self) -> bool {
        self.meta & HAS_EXPIRE != 0
    }

    pub(crate) fn set_has_expire(&mut self, has: bool) {
        if has {
            self.meta |= HAS_EXPIRE;
        } else {
            self.meta &= !HAS_EXPIRE;
        }
    }

    /// The background snapshot's parity bit (see [`crate::model::snapshot`]).
    #[inline]
    pub fn snapshot_mark(&self) -> bool {
        self.meta & SNAPSHOT_MARK != 0
    }

    /// Sets the snapshot parity bit, without a branch (every new key comes here).
    #[inline]
    pub fn set_snapshot_mark(&mut self, mark: bool) {
        self.meta = (self.meta & !SNAPSHOT_MARK) | ((mark as u32) << 29);
    }

    /// OBJECT REFCOUNT's answer. We never share values, but Redis does: a string that is an
    /// integer in `0..10000` is stored as one shared object (reported as INT_MAX), except the
    /// private duplicate COPY makes, which has a count of 1 like every other object.
    pub fn refcount(&self) -> i64 {
        match self.value {
            Value::Int(n) if (0..SHARED_INTEGERS).contains(&n) && self.meta & PRIVATE_INT == 0 => {
                SHARED_REFCOUNT
            }
            _ => 1,
        }
    }

    /// Marks (or unmarks) the value as a private duplicate rather than a shared integer.
    #[inline]
    pub fn set_private(&mut self, private: bool) {
        // Without a branch: every SET that overwrites a key comes here.
        self.meta = (self.meta & !PRIVATE_INT) | ((private as u32) << 30);
    }

    /// Idle time in milliseconds at LRU clock `now_lru`, as Redis's `estimateObjectIdleTime`.
    pub fn idle_ms(&self, now_lru: u32) -> u64 {
        let lru = self.lru();
        if now_lru >= lru {
            (now_lru - lru) as u64 * 1000
        } else {
            (now_lru as u64 + (LRU_CLOCK_MAX - lru) as u64) * 1000
        }
    }
}

/// The LRU clock at `now_ms`.
pub fn lru_clock(now_ms: i64) -> u32 {
    ((now_ms / 1000) as u64 & LRU_CLOCK_MAX as u64) as u32
}

/// The counter a new object starts with under an LFU policy (Redis's `LFU_INIT_VAL`): high
/// enough that a new key survives a while before it has had the chance to be accessed.
pub const LFU_INIT_VAL: u8 = 5;

/// The LFU clock at `now_ms`: minutes, 16 bits, wrapping (Redis's `LFUGetTimeInMinutes`).
/// The access bits of an object loaded with LFU counter `freq` at `now_ms` (RDB's FREQ).
pub fn lfu_bits(now_ms: i64, freq: u8) -> u32 {
    (lfu_minutes(now_ms) << 8) | freq as u32
}

pub fn lfu_minutes(now_ms: i64) -> u32 {
    ((now_ms.div_euclid(1000) / 60) as u64 & 0xFFFF) as u32
}

/// Minutes from `ldt` to `now_min` on the wrapping 16-bit clock, counting one wrap at most.
pub fn lfu_time_elapsed(ldt: u32, now_min: u32) -> u32 {
    if now_min >= ldt {
        now_min - ldt
    } else {
        65535 - ldt + now_min
    }
}

/// One access's logarithmic increment (Redis's `LFULogIncr`): the counter grows with
/// probability `1 / ((counter - LFU_INIT_VAL) * log_factor + 1)`, so reaching 255 takes about a
/// million accesses at the default factor of 10. `r` is a uniform draw in `[0, 1)`.
pub fn lfu_log_incr(counter: u8, log_factor: u32, r: f64) -> u8 {
    if counter == 255 {
        return 255;
    }
    let base = (counter as f64 - LFU_INIT_VAL as f64).max(0.0);
    let p = 1.0 / (base * log_factor as f64 + 1.0);
    if r < p {
        counter + 1
    } else {
        counter
    }
}

/// The counter of LFU bits `meta` decayed to `now_min` (Redis's `LFUDecrAndReturn`): one less
/// per `decay_time` minutes since the last decrement time, never below zero; a decay time of 0
/// never decays. Reading does not store the result: an access does, with its increment.
pub fn lfu_decayed(meta: u32, now_min: u32, decay_time: u32) -> u8 {
    let ldt = (meta >> 8) & 0xFFFF;
    let counter = meta & 0xFF;
    let periods = lfu_time_elapsed(ldt, now_min)
        .checked_div(decay_time)
        .unwrap_or(0);
    counter.saturating_sub(periods) as u8
}

/// What the eviction policy makes of the object header's access bits, derived from the
/// configuration (`maxmemory-policy`, `lfu-log-factor`, `lfu-decay-time`, `maxmemory`) and kept
/// by the keyspace so that an access costs one branch on `lfu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AccessClock {
    /// An LFU policy is selected: the bits hold minutes and a counter.
    pub lfu: bool,
    /// New integer values get a private object instead of Redis's shared one: Redis stops
    /// sharing them when `maxmemory` is set with an LRU or LFU policy, since a shared object
    /// has one access clock for every key holding it (OBJECT REFCOUNT shows the difference).
    pub private_ints: bool,
    pub log_factor: u32,
    pub decay_time: u32,
    /// The running command's client asked for CLIENT NO-TOUCH: accesses change nothing. Set
    /// around that client's commands only (`kernel::call`).
    pub no_touch: bool,
}

impl AccessClock {
    /// The access bits of an object created at `now_ms`.
    #[inline]
    pub fn fresh_bits(&self, now_ms: i64) -> u32 {
        if self.lfu {
            (lfu_minutes(now_ms) << 8) | LFU_INIT_VAL as u32
        } else {
            lru_clock(now_ms)
        }
    }

    /// A new object for `value`, as Redis's `createObject` makes it under this policy.
    pub fn object(&self, value: Value, now_ms: i64) -> Object {
        let mut obj = Object::new(value, self.fresh_bits(now_ms));
        obj.set_private(self.private_ints);
        obj
    }

    /// Records an access at `now_ms`: the LRU clock, or the LFU counter decayed and then
    /// incremented (Redis's `updateLFU`).
    #[inline]
    pub fn touch(&self, obj: &mut Object, now_ms: i64) {
        // `|`: one branch for both rare cases on the path every lookup inlines.
        if self.lfu | self.no_touch {
            self.touch_rarely(obj, now_ms);
        } else {
            obj.touch(lru_clock(now_ms));
        }
    }

    /// The other halves of [`AccessClock::touch`], out of line: nothing under CLIENT NO-TOUCH,
    /// else LFU's decay and increment.
    #[inline(never)]
    fn touch_rarely(&self, obj: &mut Object, now_ms: i64) {
        if !self.no_touch {
            self.touch_lfu(obj, now_ms, rand::random::<f64>());
        }
    }

    /// The LFU half of [`AccessClock::touch`] with its random draw `r` given (tests choose it).
    pub fn touch_lfu(&self, obj: &mut Object, now_ms: i64, r: f64) {
        let now_min = lfu_minutes(now_ms);
        let counter = lfu_decayed(obj.lru(), now_min, self.decay_time);
        let counter = lfu_log_incr(counter, self.log_factor, r);
        obj.touch((now_min << 8) | counter as u32);
    }

    /// OBJECT FREQ's answer: the counter decayed to `now_ms` (not stored).
    pub fn freq(&self, obj: &Object, now_ms: i64) -> u8 {
        lfu_decayed(obj.lru(), lfu_minutes(now_ms), self.decay_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_redis_rules() {
        assert_eq!(Value::string(b"123").encoding_name(), "int");
        assert_eq!(
            Value::string(b"-9223372036854775808").encoding_name(),
            "int"
        );
        assert_eq!(
            Value::string(b"9223372036854775808").encoding_name(),
            "embstr"
        );
        assert_eq!(Value::string(b"012").encoding_name(), "embstr");
        assert_eq!(Value::string(&[b'a'; 44]).encoding_name(), "embstr");
        assert_eq!(Value::string(&[b'a'; 45]).encoding_name(), "raw");
        assert_eq!(Value::plain_string(b"1").encoding_name(), "embstr");
        let mut v = Value::string(b"12");
        v.make_raw().unwrap().extend_from_slice(b"3");
        assert_eq!(v.encoding_name(), "raw");
        assert_eq!(v.string_bytes().unwrap().as_ref(), b"123");
    }

    #[test]
    fn compact_layout() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Object>(), 32);
    }

    #[test]
    fn object_header_bits() {
        let mut o = Object::new(Value::Int(1), 100);
        assert!(!o.has_expire());
        o.set_has_expire(true);
        o.touch(200);
        assert!(o.has_expire());
        assert_eq!(o.lru(), 200);
        assert_eq!(o.idle_ms(210), 10_000);
        assert_eq!(o.refcount(), SHARED_REFCOUNT, "shared small integer");
        o.set_private(true);
        assert_eq!(o.refcount(), 1);
        assert!(
            o.has_expire() && o.lru() == 200,
            "other header bits untouched"
        );
        o.set_private(false);
        assert_eq!(Object::new(Value::Int(10_000), 0).refcount(), 1);
        assert_eq!(Object::new(Value::Int(-1), 0).refcount(), 1);
        assert_eq!(Object::new(Value::string(b"x"), 0).refcount(), 1);
        assert_eq!(
            o.idle_ms(5),
            (5 + LRU_CLOCK_MAX as u64 - 200) * 1000,
            "wraps like Redis"
        );
    }

    const MINUTE: i64 = 60_000;

    fn lfu(log_factor: u32, decay_time: u32) -> AccessClock {
        AccessClock {
            lfu: true,
            private_ints: true,
            log_factor,
            decay_time,
            no_touch: false,
        }
    }

    #[test]
    fn lfu_log_increment_follows_redis_probability() {
        // At or below LFU_INIT_VAL every access counts (p = 1).
        assert_eq!(lfu_log_incr(0, 10, 0.999), 1);
        assert_eq!(lfu_log_incr(5, 10, 0.999), 6);
        // Above it, p = 1 / ((c - 5) * factor + 1): counter 7 at factor 10 gives p = 1/21.
        let p = 1.0 / 21.0;
        assert_eq!(lfu_log_incr(7, 10, p - 1e-9), 8);
        assert_eq!(lfu_log_incr(7, 10, p), 7);
        // Factor 0 makes it linear; 255 saturates.
        assert_eq!(lfu_log_incr(200, 0, 0.999), 201);
        assert_eq!(lfu_log_incr(255, 0, 0.0), 255);
        // The expected number of hits to climb from 5 to c is sum((k-5)*f+1): with factor 1,
        // 100 accesses drawn uniformly end near the solution of n = d + d(d-1)/2 (d = 13.6).
        let mut c = LFU_INIT_VAL;
        let mut rng = rand::rngs::mock::StepRng::new(0, 0x9E37_79B9_7F4A_7C15);
        for _ in 0..100 {
            let r = (rand::RngCore::next_u64(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
            c = lfu_log_incr(c, 1, r);
        }
        assert!((15..=22).contains(&c), "counter {c}");
    }

    #[test]
    fn lfu_decay_with_time() {
        let clock = lfu(10, 1);
        let t0 = 1_700_000_000_000;
        let mut o = clock.object(Value::Int(1), t0);
        assert_eq!(clock.freq(&o, t0), LFU_INIT_VAL);
        assert_eq!(o.lru() >> 8, lfu_minutes(t0));
        // One period per elapsed minute at decay time 1, floored at zero.
        assert_eq!(clock.freq(&o, t0 + 2 * MINUTE), 3);
        assert_eq!(clock.freq(&o, t0 + 60 * MINUTE), 0);
        // Decay time 0: never decays; decay time 10: one period per ten minutes.
        assert_eq!(lfu(10, 0).freq(&o, t0 + 600 * MINUTE), 5);
        assert_eq!(lfu(10, 10).freq(&o, t0 + 25 * MINUTE), 3);
        // An access stores the decayed counter, incremented, with the access minute.
        clock.touch_lfu(&mut o, t0 + 3 * MINUTE, 0.0);
        assert_eq!(clock.freq(&o, t0 + 3 * MINUTE), 3);
        assert_eq!(o.lru() >> 8, lfu_minutes(t0 + 3 * MINUTE));
        // The 16-bit minute clock wraps once.
        assert_eq!(lfu_time_elapsed(65530, 4), 9);
        let wrapped = (65534 << 8) | 9;
        assert_eq!(lfu_decayed(wrapped, 2, 1), 6);
        assert!(
            o.refcount() == 1,
            "no shared integers under LFU with maxmemory"
        );
    }

    #[test]
    fn lru_clock_objects() {
        let clock = AccessClock::default();
        let mut o = clock.object(Value::Int(1), 5_000);
        assert_eq!((o.lru(), o.refcount()), (5, SHARED_REFCOUNT));
        clock.touch(&mut o, 9_999);
        assert_eq!(o.lru(), 9);
    }
}
