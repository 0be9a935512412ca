//! A vector set as Redis 8.2 saves it: a module value of type `vectorset` (encoding version 0)
//! whose items are, in order, the dimension, the element count, the quantisation and M packed
//! as `quant | M << 8`, flags (1: a projection matrix follows, 2: every element is followed by
//! its attributes, empty for none), the projection's input dimension and matrix (floats, row by
//! row) when flagged, then per node, newest first: the element, its attributes when flagged,
//! the stored vector's bytes, and the node's parameters — id, `level | version 1 << 24`, per
//! layer the link count, the room, the linked nodes' ids and the worst link (`distance bits <<
//! 32 | index`), and last `range bits << 32 | l2 bits`.
//!
//! The same items go both ways, so that DUMP payloads and RDB files move between Redis 8.2.3 and
//! embedis. Loading refuses what Redis's loader refuses (a bad dimension, quantisation or
//! projection, a vector of the wrong size, parameters that do not add up, a link without its
//! backlink), which RESTORE reports as a bad payload.

use embedis_datatypes::vset::hnsw::{Layer, MAX_LEVEL, MAX_M};
use embedis_datatypes::vset::vector::Stored;
use embedis_datatypes::vset::{Element, Quant, SavedHeader, VectorSet, MAX_DIM};
use embedis_rdb::{module_type_id, ModuleItem, ModuleValue, RdbError};
use std::sync::atomic::{AtomicU64, Ordering};

const FLAG_PROJECTION: u64 = 1;
const FLAG_ATTRIBUTES: u64 = 2;
const SERIALIZATION_VERSION: u64 = 1;

/// The module type id of `vectorset` at encoding version 0.
pub fn vectorset_type_id() -> u64 {
    module_type_id(b"vectorset", 0)
}

/// Redis numbers every vector set it creates in the process (VINFO's `vset-uid`).
static NEXT_UID: AtomicU64 = AtomicU64::new(0);

/// The next `vset-uid`.
pub fn next_uid() -> u64 {
    NEXT_UID.fetch_add(1, Ordering::Relaxed)
}

/// A seed for a new set's level choices.
pub fn new_seed() -> u64 {
    rand::random()
}

pub fn to_module(set: &VectorSet) -> ModuleValue {
    let mut items = vec![
        ModuleItem::Uint(set.dim() as u64),
        ModuleItem::Uint(set.len() as u64),
        ModuleItem::Uint(set.quant() as u64 | (set.m() as u64 & 0xffff) << 8),
    ];
    let with_attributes = set.attributes_count() != 0;
    let flags = if set.projection_matrix().is_some() {
        FLAG_PROJECTION
    } else {
        0
    } | if with_attributes { FLAG_ATTRIBUTES } else { 0 };
    items.push(ModuleItem::Uint(flags));
    if let Some(matrix) = set.projection_matrix() {
        items.push(ModuleItem::Uint(set.projection_input() as u64));
        let bytes = matrix.iter().flat_map(|f| f.to_le_bytes()).collect();
        items.push(ModuleItem::String(bytes));
    }
    for node in set.saved_nodes() {
        items.push(ModuleItem::String(node.element.name.to_vec()));
        if with_attributes {
            let a = node.element.attributes.as_deref().unwrap_or_default();
            items.push(ModuleItem::String(a.to_vec()));
        }
        items.push(ModuleItem::String(node.vector.raw_bytes()));
        let mut params = vec![
            node.id,
            (node.layers.len() as u64 - 1) | SERIALIZATION_VERSION << 24,
        ];
        for (ids, layer) in &node.layers {
            params.push(ids.len() as u64);
            params.push(layer.max_links as u64);
            params.extend(ids);
            params.push((layer.worst_distance.to_bits() as u64) << 32 | layer.worst_idx as u64);
        }
        params.push((node.vector.range.to_bits() as u64) << 32 | node.vector.l2.to_bits() as u64);
        items.push(ModuleItem::Uint(params.len() as u64));
        items.extend(params.into_iter().map(ModuleItem::Uint));
    }
    ModuleValue {
        type_id: vectorset_type_id(),
        items,
    }
}

fn bad<T>(why: &str) -> Result<T, RdbError> {
    Err(RdbError::Corrupt(format!("vector set: {why}")))
}

/// Reads the items in order.
struct Items {
    items: std::vec::IntoIter<ModuleItem>,
}

impl Items {
    fn uint(&mut self) -> Result<u64, RdbError> {
        match self.items.next() {
            Some(ModuleItem::Uint(v)) => Ok(v),
            _ => bad("expected an integer"),
        }
    }

    fn string(&mut self) -> Result<Vec<u8>, RdbError> {
        match self.items.next() {
            Some(ModuleItem::String(s)) => Ok(s),
            _ => bad("expected a string"),
        }
    }
}

pub fn from_module(m: ModuleValue) -> Result<VectorSet, RdbError> {
    if m.type_id != vectorset_type_id() {
        return Err(RdbError::Unsupported(format!(
            "module type id {:#x}",
            m.type_id
        )));
    }
    let mut it = Items {
        items: m.items.into_iter(),
    };
    let dim = it.uint()? as usize;
    let count = it.uint()?;
    let config = it.uint()?;
    if dim == 0 || dim > MAX_DIM {
        return bad("dimension");
    }
    let quant = Quant::from_code(config & 0xff).ok_or(RdbError::Corrupt("quant".into()))?;
    let m = match ((config >> 8) & 0xffff) as u32 {
        0 => 16,
        m => m,
    };
    let flags = it.uint()?;
    let projection = if flags & FLAG_PROJECTION != 0 {
        let input = it.uint()? as usize;
        // A projection may widen (Redis 8.2.3's VADD takes a REDUCE above the input's
        // dimension, and its loader reads such a set back).
        if input == 0 || input > MAX_DIM {
            return bad("projection dimensions");
        }
        let blob = it.string()?;
        if blob.len() != 4 * input * dim {
            return bad("projection matrix length");
        }
        let matrix = blob
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        Some((matrix, input))
    } else {
        None
    };
    let mut nodes = Vec::new();
    for _ in 0..count {
        nodes.push(read_node(
            &mut it,
            dim,
            quant,
            flags & FLAG_ATTRIBUTES != 0,
        )?);
    }
    if it.items.next().is_some() {
        return bad("trailing items");
    }
    let header = SavedHeader {
        dim,
        quant,
        m,
        projection,
    };
    VectorSet::from_saved(header, nodes, next_uid(), new_seed())
        .map_err(|why| RdbError::Corrupt(format!("vector set: {why}")))
}

use embedis_datatypes::vset::LoadedParts as LoadedNode;

fn read_node(
    it: &mut Items,
    dim: usize,
    quant: Quant,
    with_attributes: bool,
) -> Result<LoadedNode, RdbError> {
    let name = it.string()?;
    let attributes = if with_attributes {
        Some(it.string()?).filter(|a| !a.is_empty())
    } else {
        None
    };
    let raw = it.string()?;
    let count = it.uint()? as usize;
    let mut params = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        params.push(it.uint()?);
    }
    let (id, layers, l2_and_range) = parse_params(&params)?;
    let l2 = f32::from_bits(l2_and_range as u32);
    let range = f32::from_bits((l2_and_range >> 32) as u32);
    let vector = match Stored::from_raw(quant, dim, &raw, l2, range) {
        Some(v) => v,
        None => return bad("vector size"),
    };
    let element = Element {
        name: name.into(),
        attributes: attributes.map(Into::into),
    };
    Ok((element, id, vector, layers))
}

/// A node's parameters: its id, its layers (links as ids), and the packed l2 and range.
/// A node's parameters read: id, layers with their links as ids, packed l2 and range.
type Params = (u64, Vec<(Vec<u64>, Layer)>, u64);

fn parse_params(p: &[u64]) -> Result<Params, RdbError> {
    if p.len() < 2 {
        return bad("parameters");
    }
    let (id, level, version) = (p[0], (p[1] & 0xff) as u32, (p[1] >> 24) & 0xff);
    if version > SERIALIZATION_VERSION || id == 0 || level > MAX_LEVEL {
        return bad("node header");
    }
    let has_worst = version > 0;
    let mut at = 2;
    let mut layers = Vec::with_capacity(level as usize + 1);
    for _ in 0..=level {
        let need = |at: usize, n: usize| {
            if at + n > p.len() {
                bad("parameters")
            } else {
                Ok(())
            }
        };
        need(at, 2 + has_worst as usize)?;
        let (num, max) = (p[at] as usize, p[at + 1]);
        at += 2;
        if num as u64 > max || max > MAX_M as u64 * 4 {
            return bad("link counts");
        }
        need(at, num + has_worst as usize)?;
        let ids = p[at..at + num].to_vec();
        at += num;
        let (worst_distance, worst_idx) = if has_worst {
            let w = p[at];
            at += 1;
            (f32::from_bits((w >> 32) as u32), w as u32)
        } else {
            (0.0, 0)
        };
        if num > 0 && worst_idx as usize >= num {
            return bad("worst link");
        }
        let layer = Layer {
            links: Vec::new(),
            max_links: max as u32,
            worst_distance,
            worst_idx,
        };
        layers.push((ids, layer));
    }
    if at >= p.len() {
        return bad("parameters");
    }
    Ok((id, layers, p[at]))
}
