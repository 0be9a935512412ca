//! INFO keysizes (Redis 8.0 and later): per database, how many strings fall in each power-of-two
//! bin of their length, and how many lists, sets, sorted sets and hashes in each bin of their
//! element count. Streams and vector sets are not counted, as in Redis 8.2.3.
//!
//! The histogram is kept as keys change rather than computed per INFO (a scan would cost INFO
//! the whole keyspace). Every object carries the bin it is counted in ([`Object`]'s `keysize`
//! tag, in the header's padding), so whichever path removes a key uncounts exactly what was
//! counted, even when a command has changed the value since; a value changed in place is
//! re-binned after its command (the keyspace lists the keys it lent for writing), which only
//! moves a count when the size crossed a power of two. A server behaving as a Redis older than
//! 8.0 has no histogram at all ([`crate::model::keyspace::Db::keysizes`] is None) and pays one
//! branch at each of those places.

use crate::base::value::{Object, Value};

/// Counted types, in the order INFO lists them.
const TYPES: [&str; 5] = [
    "strings_sizes",
    "lists_items",
    "sets_items",
    "zsets_items",
    "hashes_items",
];
/// Bin 0 holds the empty (strings only), bin `b` the sizes in `2^(b-1) .. 2^b`.
const BINS: usize = 65;

/// One database's histogram.
#[derive(Clone)]
pub struct KeySizes {
    counts: [[u64; BINS]; TYPES.len()],
}

impl Default for KeySizes {
    fn default() -> Self {
        KeySizes {
            counts: [[0; BINS]; TYPES.len()],
        }
    }
}

/// The tag of `value`: `(type + 1) << 8 | bin`, or 0 for a type that is not counted.
pub fn tag_of(value: &Value) -> u16 {
    let (kind, size) = match value {
        Value::Int(n) => (0, int_len(*n)),
        Value::Str(s) => (0, s.len()),
        Value::Raw(v) => (0, v.len()),
        Value::Hll(h) => (0, h.len()),
        Value::List(l) => (1, l.len()),
        Value::Set(s) => (2, s.len()),
        Value::ZSet(z) => (3, z.len()),
        Value::Hash(h) => (4, h.len()),
        Value::Stream(_) | Value::VectorSet(_) => return 0,
    };
    let bin = usize::BITS - size.leading_zeros();
    ((kind + 1) << 8) | bin as u16
}

/// The length of `n` written in decimal (an `int` string's length).
fn int_len(n: i64) -> usize {
    let digits = n.unsigned_abs().checked_ilog10().unwrap_or(0) as usize + 1;
    digits + (n < 0) as usize
}

impl KeySizes {
    /// Counts `obj`, a key just stored (whatever its tag said before: a copy's tag is stale).
    // Out of line: the callers' fast paths keep only the branch on whether a histogram is
    // kept (a server behaving as 7.x has none).
    #[inline(never)]
    pub fn count(&mut self, obj: &mut Object) {
        let tag = tag_of(&obj.value);
        self.add(tag, 1);
        obj.keysize = tag;
    }

    /// Uncounts `obj`, a key being removed.
    // Out of line: the callers' fast paths keep only the branch on whether a histogram is
    // kept (a server behaving as 7.x has none).
    #[inline(never)]
    pub fn uncount(&mut self, obj: &Object) {
        self.add(obj.keysize, -1);
    }

    /// Moves `obj` to the bin of its value now, if that changed.
    // Out of line: the callers' fast paths keep only the branch on whether a histogram is
    // kept (a server behaving as 7.x has none).
    #[inline(never)]
    pub fn resync(&mut self, obj: &mut Object) {
        let tag = tag_of(&obj.value);
        if tag != obj.keysize {
            self.add(obj.keysize, -1);
            self.add(tag, 1);
            obj.keysize = tag;
        }
    }

    fn add(&mut self, tag: u16, delta: i64) {
        if tag != 0 {
            let cell = &mut self.counts[(tag >> 8) as usize - 1][(tag & 0xff) as usize];
            *cell = cell.wrapping_add_signed(delta);
        }
    }

    /// Appends database `db`'s INFO lines: one per type whose counts add up to something,
    /// `bin=count` for the bins that have some, the bin named by its lower bound (`1`, `2`, …
    /// `512`, `1K`…), comma-separated. As Redis 8.2.3 prints them when a count has been driven
    /// below zero (see [`crate::model::keyspace::Keyspace::keysize_uncounted`]): the count
    /// shows as an unsigned 64-bit number, and an entry gets its comma only if the counts
    /// before it add up to something (Redis tests the running sum, not whether it printed).
    pub fn render(&self, db: usize, out: &mut String) {
        use std::fmt::Write;
        for (kind, name) in TYPES.iter().enumerate() {
            let row = &self.counts[kind];
            if row.iter().fold(0u64, |sum, &n| sum.wrapping_add(n)) == 0 {
                continue;
            }
            let _ = write!(out, "db{db}_distrib_{name}:");
            let mut sum = 0u64;
            for (bin, &n) in row.iter().enumerate().filter(|(_, &n)| n != 0) {
                let sep = if sum != 0 { "," } else { "" };
                let _ = write!(out, "{sep}{}={n}", bin_label(bin));
                sum = sum.wrapping_add(n);
            }
            out.push_str("\r\n");
        }
    }
}

/// The lower bound of `bin` with a binary unit suffix: `0`, `1`, `512`, `1K`, `4M`…
fn bin_label(bin: usize) -> String {
    if bin == 0 {
        return "0".to_string();
    }
    let exp = bin - 1;
    let units = ["", "K", "M", "G", "T", "P", "E"];
    format!("{}{}", 1u64 << (exp % 10), units[exp / 10])
}

#[cfg(test)]
mod tests {
    use super::*;
    use embedis_datatypes::SmallBytes;

    fn string(len: usize) -> Object {
        Object::new(Value::Str(SmallBytes::new(&vec![b'x'; len])), 0)
    }

    #[test]
    fn bins_are_powers_of_two_named_with_binary_units() {
        let labels: Vec<String> = [0, 1, 2, 10, 11, 21, 31].map(bin_label).to_vec();
        assert_eq!(labels, ["0", "1", "2", "512", "1K", "1M", "1G"]);
        assert_eq!(tag_of(&string(0).value), 0x100);
        assert_eq!(tag_of(&string(3).value), 0x102);
        assert_eq!(tag_of(&string(4).value), 0x103);
        assert_eq!(tag_of(&Value::Int(-10)), 0x102, "three characters");
        assert_eq!(tag_of(&Value::Int(9)), 0x101);
        assert_eq!(tag_of(&Value::Int(i64::MIN)), 0x105, "twenty characters");
    }

    #[test]
    fn counts_follow_resync_and_uncount() {
        let mut h = KeySizes::default();
        let mut obj = string(5);
        h.count(&mut obj);
        obj.value = Value::Str(SmallBytes::new(b"0123456789"));
        h.resync(&mut obj);
        let mut out = String::new();
        h.render(3, &mut out);
        assert_eq!(out, "db3_distrib_strings_sizes:8=1\r\n");
        h.uncount(&obj);
        out.clear();
        h.render(3, &mut out);
        assert_eq!(out, "");
    }
}
