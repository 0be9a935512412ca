//! The classes of keyspace notifications, as `notify-keyspace-events` spells them: one bit per
//! letter (Redis's own bit values, so that a flag set reads the same in both). `K` and `E` say
//! where events go (the `__keyspace@…` and `__keyevent@…` channels), the others which events.

pub const KEYSPACE: u32 = 1 << 0;
pub const KEYEVENT: u32 = 1 << 1;
pub const GENERIC: u32 = 1 << 2;
pub const STRING: u32 = 1 << 3;
pub const LIST: u32 = 1 << 4;
pub const SET: u32 = 1 << 5;
pub const HASH: u32 = 1 << 6;
pub const ZSET: u32 = 1 << 7;
pub const EXPIRED: u32 = 1 << 8;
pub const EVICTED: u32 = 1 << 9;
pub const STREAM: u32 = 1 << 10;
pub const KEY_MISS: u32 = 1 << 11;
pub const MODULE: u32 = 1 << 13;
pub const NEW: u32 = 1 << 14;
/// `A`: every class but key misses and new keys, which are noisy enough that Redis makes
/// them opt-in.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The class of each letter that `A` abbreviates, in the order CONFIG GET lists them.
const SPELLED: [(u8, u32); 11] = [
    (b'g', GENERIC),
    (b'$', STRING),
    (b'l', LIST),
    (b's', SET),
    (b'h', HASH),
    (b'z', ZSET),
    (b'x', EXPIRED),
    (b'e', EVICTED),
    (b't', STREAM),
    (b'd', MODULE),
    (b'n', NEW),
];

/// The classes `letters` names (case matters: `e` is evicted, `E` keyevent), or None if it
/// holds a letter that names none.
pub fn from_letters(letters: &str) -> Option<u32> {
    letters.bytes().try_fold(0, |flags, letter| {
        let class = match letter {
            b'A' => ALL,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b'm' => KEY_MISS,
            _ => SPELLED.iter().find(|(l, _)| *l == letter)?.1,
        };
        Some(flags | class)
    })
}

/// The canonical spelling CONFIG GET reports: `A` when it covers every class it stands
/// for, else the class letters in a fixed order; then `K`, `E` and `m`.
pub fn to_letters(flags: u32) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        // Redis lists nothing else here, not even `n`, which `A` does not include: CONFIG
        // GET of `AnE` says `AE` although new-key events stay on.
        out.push('A');
    } else {
        for (letter, class) in SPELLED {
            if flags & class != 0 {
                out.push(letter as char);
            }
        }
    }
    for (letter, class) in [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEY_MISS)] {
        if flags & class != 0 {
            out.push(letter);
        }
    }
    out
}
