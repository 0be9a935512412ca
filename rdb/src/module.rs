//! Values of module types (`RDB_TYPE_MODULE_2`), the form Redis 8.2 saves a vector set in: the
//! type's 64-bit id (its 9-character name in a 64-letter alphabet, 6 bits a letter, then a
//! 10-bit encoding version), then what the type's save function wrote as a sequence of typed
//! items — unsigned and signed integers, floats, doubles, strings — each behind its opcode, up
//! to an end opcode. This module knows the container, not any type's meaning: the server turns
//! the items into its value.

use std::io::{Read, Write};

use crate::error::RdbError;
use crate::primitives::{
    read_array, read_binary_double, read_len, read_string, write_binary_double, write_len,
    write_string,
};

const OP_EOF: u64 = 0;
const OP_SINT: u64 = 1;
const OP_UINT: u64 = 2;
const OP_FLOAT: u64 = 3;
const OP_DOUBLE: u64 = 4;
const OP_STRING: u64 = 5;

/// The alphabet of module type names.
const NAME_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The id Redis gives module type `name` (9 characters) at encoding version `encver`.
pub fn module_type_id(name: &[u8; 9], encver: u16) -> u64 {
    let mut id = 0u64;
    for c in name {
        let pos = NAME_CHARS.iter().position(|x| x == c).unwrap_or(0);
        id = (id << 6) | pos as u64;
    }
    (id << 10) | (encver as u64 & 1023)
}

/// One item a module type's save function wrote.
#[derive(Clone, Debug, PartialEq)]
pub enum ModuleItem {
    Uint(u64),
    Sint(i64),
    Float(f32),
    Double(f64),
    String(Vec<u8>),
}

/// A module value: its type id and its items.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleValue {
    pub type_id: u64,
    pub items: Vec<ModuleItem>,
}

pub fn write_module<W: Write>(w: &mut W, m: &ModuleValue, compress: bool) -> Result<(), RdbError> {
    write_len(w, m.type_id)?;
    for item in &m.items {
        match item {
            ModuleItem::Uint(v) => {
                write_len(w, OP_UINT)?;
                write_len(w, *v)?;
            }
            ModuleItem::Sint(v) => {
                write_len(w, OP_SINT)?;
                write_len(w, *v as u64)?;
            }
            ModuleItem::Float(v) => {
                write_len(w, OP_FLOAT)?;
                w.write_all(&v.to_le_bytes())?;
            }
            ModuleItem::Double(v) => {
                write_len(w, OP_DOUBLE)?;
                write_binary_double(w, *v)?;
            }
            ModuleItem::String(s) => {
                write_len(w, OP_STRING)?;
                write_string(w, s, compress)?;
            }
        }
    }
    write_len(w, OP_EOF)
}

/// Reads a module value (after its type byte), up to its end opcode. Items are capped so that
/// a corrupt count cannot run away with memory before the input ends.
pub fn read_module<R: Read>(r: &mut R) -> Result<ModuleValue, RdbError> {
    let type_id = read_len(r)?;
    let mut items = Vec::new();
    loop {
        let item = match read_len(r)? {
            OP_EOF => break,
            OP_UINT => ModuleItem::Uint(read_len(r)?),
            OP_SINT => ModuleItem::Sint(read_len(r)? as i64),
            OP_FLOAT => ModuleItem::Float(f32::from_le_bytes(read_array(r)?)),
            OP_DOUBLE => ModuleItem::Double(read_binary_double(r)?),
            OP_STRING => ModuleItem::String(read_string(r)?),
            op => {
                return Err(RdbError::Corrupt(format!("unknown module opcode {op}")));
            }
        };
        items.push(item);
    }
    Ok(ModuleValue { type_id, items })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_vectorset_id_is_redis_s() {
        assert_eq!(module_type_id(b"vectorset", 0), 0xbde7_2da2_bb1e_b400);
    }

    fn item() -> impl Strategy<Value = ModuleItem> {
        prop_oneof![
            any::<u64>().prop_map(ModuleItem::Uint),
            any::<i64>().prop_map(ModuleItem::Sint),
            any::<f32>()
                .prop_filter("NaN", |f| !f.is_nan())
                .prop_map(ModuleItem::Float),
            any::<f64>()
                .prop_filter("NaN", |f| !f.is_nan())
                .prop_map(ModuleItem::Double),
            prop::collection::vec(any::<u8>(), 0..60).prop_map(ModuleItem::String),
        ]
    }

    proptest! {
        #[test]
        fn items_round_trip(id in any::<u64>(), items in prop::collection::vec(item(), 0..20),
                            compress in any::<bool>()) {
            let m = ModuleValue { type_id: id, items };
            let mut out = Vec::new();
            write_module(&mut out, &m, compress).unwrap();
            prop_assert_eq!(read_module(&mut out.as_slice()).unwrap(), m);
        }
    }
}
