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
//! [`Object`] adds what Redis keeps in every object header: the access clock for OBJECT IDLETIME
//! and a flag saying whether the key has a TTL (so deleting a key without one never touches the
//! expiry index).

use embedis_datatypes::hash::HashValue;
use embedis_datatypes::hll::Hll;
use embedis_datatypes::quicklist::Quicklist;
use embedis_datatypes::set::SetValue;
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
    List(Box<Quicklist>),
    Hash(HashValue),
    Set(SetValue),
    ZSet(ZSetValue),
}

/// The type names TYPE and SCAN TYPE use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    String,
    List,
    Hash,
    Set,
    ZSet,
}

impl ValueType {
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::List => "list",
            ValueType::Hash => "hash",
            ValueType::Set => "set",
            ValueType::ZSet => "zset",
        }
    }
}

impl Value {
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
        }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Str(s) if s.len() <= EMBSTR_MAX => "embstr",
            Value::Str(_) | Value::Raw(_) | Value::Hll(_) => "raw",
            Value::List(_) => "quicklist",
            Value::Hash(h) => h.encoding_name(),
            Value::Set(s) => s.encoding_name(),
            Value::ZSet(z) => z.encoding_name(),
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
}

impl Object {
    pub fn new(value: Value, lru: u32) -> Self {
        Object {
            value,
            meta: lru & LRU_CLOCK_MAX,
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
    pub fn set_private(&mut self, private: bool) {
        if private {
            self.meta |= PRIVATE_INT;
        } else {
            self.meta &= !PRIVATE_INT;
        }
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
}
