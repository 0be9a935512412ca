//! MEMORY USAGE of a vector set, as Redis 8.2.3 figures it: the key's object (a `kvobj`
//! holding the key) plus the estimate the vectorset module's `mem_usage` callback makes from
//! its structure sizes, not a measure of our own layout.
//!
//! The module's estimate is deterministic for a given set: it counts every node as a node
//! header, a quantised vector, 1.33 layer headers and the links of layer 0 (plus a third of
//! half as many for the upper layers), sized by the first node's layer-0 capacity; the
//! elements and attributes at the average of the 20 newest; and two words per element for its
//! dictionary. Sizes are those of a 64-bit build whose jemalloc has an 8-byte quantum, as
//! Redis configures it.

use embedis_datatypes::vset::VectorSet;

/// `sizeof` of the module's structures on a 64-bit build: `struct vsetObject`, `HNSW`,
/// `hnswNode` (with its 32 per-thread visit epochs) and `hnswNodeLayer`.
const VSET_OBJECT: usize = 112;
const HNSW: usize = 1672;
const HNSW_NODE: usize = 312;
const NODE_LAYER: usize = 24;
const POINTER: usize = 8;
/// Nodes whose element and attributes the module measures before extrapolating.
const SCAN: usize = 20;
/// The module's guess per attribute when none of the scanned nodes has one.
const ATTRIBUTE_GUESS: usize = 64;
/// Redis's longest string kept in one allocation with its object (`EMBSTR`).
const EMBSTR_LIMIT: usize = 44;
const ROBJ: usize = 16;

/// The figure MEMORY USAGE answers for a vector set under a key of `key_len` bytes.
pub fn usage(set: &VectorSet, key_len: usize, has_expire: bool) -> usize {
    key_object(key_len, has_expire) + module_estimate(set)
}

/// The `kvobj` allocation: the expiry slot if any, the object header, the key's header-size
/// byte and the key as an sds string.
fn key_object(key_len: usize, has_expire: bool) -> usize {
    let expire = if has_expire { 8 } else { 0 };
    malloc_size(expire + ROBJ + 1 + sds_header(key_len) + key_len + 1)
}

/// The module's `VectorSetMemUsage`.
pub fn module_estimate(set: &VectorSet) -> usize {
    let n = set.len();
    let mut size = VSET_OBJECT + HNSW;
    if let Some(matrix) = set.projection_matrix() {
        size += 4 * matrix.len();
    }
    let mut nodes = set.saved_nodes();
    let Some(head) = nodes.next() else {
        return size;
    };
    size += HNSW_NODE * n + set.quant().bytes(set.dim()) * n;
    size += NODE_LAYER * n * 4 / 3;
    let level0 = head.layers.first().map_or(0, |(_, l)| l.max_links as usize);
    size += POINTER * level0 * n;
    size += POINTER * (level0 / 2) * n / 3;
    let (mut items, mut attributes, mut with_attributes) = (0, 0, 0);
    let mut scanned = 0;
    for node in std::iter::once(head).chain(nodes).take(SCAN) {
        items += string_size(node.element.name.len());
        if let Some(a) = &node.element.attributes {
            attributes += string_size(a.len());
            with_attributes += 1;
        }
        scanned += 1;
    }
    size += items / scanned * n;
    if with_attributes == 0 {
        (attributes, with_attributes) = (ATTRIBUTE_GUESS, 1);
    }
    size += attributes / with_attributes * set.attributes_count() as usize;
    size + 2 * POINTER * n
}

/// `RedisModule_MallocSizeString` of a string the module keeps (a command argument, or one
/// loaded from a file): an embedded string is one allocation with its object, a longer one
/// the object plus its sds buffer. (An argument of 32 KB or more keeps the query buffer it
/// arrived in, whose spare room Redis would count too.)
fn string_size(len: usize) -> usize {
    if len <= EMBSTR_LIMIT {
        malloc_size(ROBJ + 3 + len + 1)
    } else {
        ROBJ + malloc_size(sds_header(len) + len + 1)
    }
}

/// The header of an sds string of `len` bytes (types 5, 8, 16, 32, 64).
fn sds_header(len: usize) -> usize {
    match len {
        0..=31 => 1,
        32..=255 => 3,
        256..=65_535 => 5,
        _ if len as u64 <= u32::MAX as u64 => 9,
        _ => 17,
    }
}

/// jemalloc's size class for `n` bytes with Redis's 8-byte quantum: multiples of 8 up to 64,
/// then four classes per doubling.
fn malloc_size(n: usize) -> usize {
    if n <= 64 {
        return n.div_ceil(8).max(1) * 8;
    }
    let k = usize::BITS - 1 - (n - 1).leading_zeros();
    let step = 1usize << (k - 2);
    n.div_ceil(step) * step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_have_an_8_byte_quantum() {
        for (n, class) in [(1, 8), (23, 24), (41, 48), (64, 64), (65, 80), (104, 112)] {
            assert_eq!(malloc_size(n), class, "{n}");
        }
        assert_eq!(malloc_size(204), 224);
        assert_eq!(malloc_size(276), 320);
    }

    #[test]
    fn strings_are_embedded_up_to_44_bytes() {
        assert_eq!(string_size(4), 24);
        assert_eq!(string_size(5), 32);
        assert_eq!(string_size(44), 64);
        assert_eq!(string_size(45), 72);
        assert_eq!(string_size(61), 96);
    }

    #[test]
    fn the_key_object_embeds_the_key() {
        assert_eq!(key_object(4, false), 24);
        assert_eq!(key_object(16, false), 40);
        assert_eq!(key_object(2, true), 32);
        assert_eq!(key_object(32, false), 56);
        assert_eq!(key_object(49, false), 80);
    }
}
