//! The vector set (Redis 8.2's `vectorset` type): elements (byte strings) with a vector each,
//! searchable by cosine similarity, and optional JSON attributes for FILTER.
//!
//! It is Redis's dual structure: an HNSW graph ([`hnsw`]) whose nodes hold the element and its
//! attributes, and a map from element to node for VREM, VEMB, VSETATTR and updates. Vectors
//! are stored normalised and quantised ([`vector`]); a set made with REDUCE keeps the
//! projection matrix and projects every vector it is given. The set knows nothing of
//! commands: the server checks arguments and turns results into replies.
//!
//! - [`vector`]: normalisation, quantisation, distances, the projection;
//! - [`hnsw`]: the graph;
//! - [`expr`], [`token`] and [`json`]: the FILTER language over the attributes.

pub mod expr;
pub mod hnsw;
pub mod json;
pub mod token;
pub mod vector;

use hnsw::{Found, Hnsw, Layer, LoadedNode};
use std::collections::HashMap;
pub use vector::Quant;
use vector::Stored;

/// Default exploration factor of insertions (VADD without EF).
pub const DEFAULT_BUILD_EF: usize = 200;
/// Default M.
pub const DEFAULT_M: u32 = 16;
/// The largest dimension Redis accepts.
pub const MAX_DIM: usize = 1 << 16;

/// What a node holds besides its vector.
#[derive(Clone, Debug)]
pub struct Element {
    pub name: Box<[u8]>,
    pub attributes: Option<Box<[u8]>>,
}

#[derive(Clone, Debug)]
pub struct VectorSet {
    graph: Hnsw<Element>,
    names: HashMap<Box<[u8]>, u32>,
    /// REDUCE's matrix (output × input, row by row) and its input dimension.
    projection: Option<(Vec<f32>, usize)>,
    /// VINFO's `vset-uid`.
    pub uid: u64,
    attributes: u64,
}

/// One search hit: the element, its distance, its attributes.
pub struct Hit<'a> {
    pub name: &'a [u8],
    pub distance: f32,
    pub attributes: Option<&'a [u8]>,
}

impl VectorSet {
    /// An empty set of `dim`-component vectors (after projection, if `projected_from` names
    /// the input dimension). `seed` drives the level choice and random walks.
    pub fn new(
        dim: usize,
        quant: Quant,
        m: u32,
        projected_from: Option<usize>,
        uid: u64,
        seed: u64,
    ) -> VectorSet {
        VectorSet {
            graph: Hnsw::new(dim, quant, m, seed),
            names: HashMap::new(),
            projection: projected_from.map(|input| (vector::projection_matrix(input, dim), input)),
            uid,
            attributes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.graph.count
    }

    pub fn is_empty(&self) -> bool {
        self.graph.count == 0
    }

    pub fn dim(&self) -> usize {
        self.graph.dim
    }

    pub fn quant(&self) -> Quant {
        self.graph.quant
    }

    pub fn m(&self) -> u32 {
        self.graph.m
    }

    /// The input dimension of REDUCE's projection, 0 without one.
    pub fn projection_input(&self) -> usize {
        self.projection.as_ref().map_or(0, |p| p.1)
    }

    pub fn projection_matrix(&self) -> Option<&[f32]> {
        self.projection.as_ref().map(|p| p.0.as_slice())
    }

    pub fn max_level(&self) -> u32 {
        self.graph.max_level
    }

    pub fn attributes_count(&self) -> u64 {
        self.attributes
    }

    pub fn last_node_id(&self) -> u64 {
        self.graph.last_id
    }

    /// `x` projected if the set has a projection, else as given.
    pub fn project(&self, x: Vec<f32>) -> Vec<f32> {
        match &self.projection {
            Some((m, _)) => vector::project(&x, m, self.graph.dim),
            None => x,
        }
    }

    pub fn contains(&self, name: &[u8]) -> bool {
        self.names.contains_key(name)
    }

    /// Adds `name` with vector `x` (already projected). An existing element gets the new
    /// vector (and the attributes when `attributes` is given, `Some(empty)` removing them).
    /// True if the element is new.
    pub fn add(&mut self, name: &[u8], x: Vec<f32>, attributes: Option<&[u8]>, ef: usize) -> bool {
        if let Some(&at) = self.names.get(name) {
            let at = self.graph.reinsert(at, x, ef);
            self.names.insert(name.into(), at);
            if let Some(a) = attributes {
                self.set_attributes_at(at, a);
            }
            return false;
        }
        // A new element keeps even an empty text as its attributes, as Redis does (an update
        // with an empty text removes them).
        let attributes = attributes.map(Box::from);
        self.attributes += attributes.is_some() as u64;
        let element = Element {
            name: name.into(),
            attributes,
        };
        let at = self.graph.insert(x, element, ef);
        self.names.insert(name.into(), at);
        true
    }

    /// Removes `name`; true if it was there.
    pub fn remove(&mut self, name: &[u8]) -> bool {
        let Some(at) = self.names.remove(name) else {
            return false;
        };
        let element = self.graph.remove(at);
        self.attributes -= element.attributes.is_some() as u64;
        true
    }

    fn set_attributes_at(&mut self, at: u32, a: &[u8]) {
        let e = &mut self.graph.node_mut(at).value;
        let had = e.attributes.is_some();
        e.attributes = (!a.is_empty()).then(|| Box::from(a));
        let has = e.attributes.is_some();
        self.attributes = self.attributes + has as u64 - had as u64;
    }

    /// Sets (or, with an empty text, removes) an element's attributes; false if no element.
    pub fn set_attributes(&mut self, name: &[u8], a: &[u8]) -> bool {
        match self.names.get(name) {
            Some(&at) => {
                self.set_attributes_at(at, a);
                true
            }
            None => false,
        }
    }

    pub fn attributes(&self, name: &[u8]) -> Option<Option<&[u8]>> {
        let &at = self.names.get(name)?;
        Some(self.graph.node(at).value.attributes.as_deref())
    }

    /// The de-quantised vector of an element (VEMB, VSIM ELE).
    pub fn vector(&self, name: &[u8]) -> Option<Vec<f32>> {
        let &at = self.names.get(name)?;
        Some(self.graph.node(at).vector.dequantize(self.graph.dim))
    }

    /// The stored form of an element's vector (VEMB RAW).
    pub fn stored(&self, name: &[u8]) -> Option<&Stored> {
        let &at = self.names.get(name)?;
        Some(&self.graph.node(at).vector)
    }

    /// An element's neighbours per level, top level first, each with its distance.
    pub fn links(&self, name: &[u8]) -> Option<Vec<Vec<Neighbour<'_>>>> {
        let &at = self.names.get(name)?;
        let node = self.graph.node(at);
        let dim = self.graph.dim;
        Some(
            node.layers
                .iter()
                .rev()
                .map(|l| {
                    l.links
                        .iter()
                        .map(|&n| {
                            let other = self.graph.node(n);
                            (&*other.value.name, node.vector.distance(&other.vector, dim))
                        })
                        .collect()
                })
                .collect(),
        )
    }

    /// The `k` elements nearest `query`: by the graph with exploration factor `k`, or by a
    /// full scan when `exact`; with a filter, only elements it accepts, exploring at most
    /// `max_effort` candidates.
    pub fn search(
        &mut self,
        query: &[f32],
        k: usize,
        filter: Option<&expr::Program>,
        max_effort: usize,
        exact: bool,
    ) -> Vec<Hit<'_>> {
        let mut accept = |e: &Element| filter.is_some_and(|p| p.matches(e.attributes.as_deref()));
        let f: Option<&mut dyn FnMut(&Element) -> bool> = match filter {
            Some(_) => Some(&mut accept),
            None => None,
        };
        let found: Found = if exact {
            self.graph.search_exact(query, k, f)
        } else {
            self.graph.search(query, k, f, max_effort)
        };
        found
            .into_iter()
            .map(|(distance, at)| {
                let e = &self.graph.node(at).value;
                Hit {
                    name: &e.name,
                    distance,
                    attributes: e.attributes.as_deref(),
                }
            })
            .collect()
    }

    /// A random element (VRANDMEMBER).
    pub fn random(&mut self) -> Option<&[u8]> {
        let at = self.graph.random_node()?;
        Some(&self.graph.node(at).value.name)
    }

    /// `count` distinct elements from a random start, in list order, wrapping around.
    pub fn walk_from_random(&mut self, count: usize) -> Vec<&[u8]> {
        let Some(start) = self.graph.random_node() else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(count);
        let mut at = Some(start);
        while out.len() < count {
            let n = at.or(self.graph.head).expect("non-empty");
            out.push(n);
            at = self.graph.next_of(n);
        }
        out.into_iter()
            .map(|n| &*self.graph.node(n).value.name)
            .collect()
    }

    /// The nodes as a file holds them, newest first.
    pub fn saved_nodes(&self) -> impl Iterator<Item = SavedNode<'_>> + '_ {
        self.graph.iter().map(move |at| {
            let n = self.graph.node(at);
            SavedNode {
                id: n.id,
                element: &n.value,
                vector: &n.vector,
                layers: n
                    .layers
                    .iter()
                    .map(|l| {
                        let ids = l.links.iter().map(|&t| self.graph.node(t).id).collect();
                        (ids, l)
                    })
                    .collect(),
            }
        })
    }

    /// A set from a file's nodes (newest first). `Err` names what is wrong.
    pub fn from_saved(
        header: SavedHeader,
        nodes: Vec<LoadedParts>,
        uid: u64,
        seed: u64,
    ) -> Result<VectorSet, &'static str> {
        let mut names = HashMap::with_capacity(nodes.len());
        let mut attributes = 0;
        let mut loaded = Vec::with_capacity(nodes.len());
        for (element, id, vector, layers) in nodes {
            attributes += element.attributes.is_some() as u64;
            loaded.push(LoadedNode {
                id,
                vector,
                layers,
                value: element,
            });
        }
        let graph = Hnsw::from_loaded(header.dim, header.quant, header.m, seed, loaded)?;
        for at in graph.iter() {
            if names
                .insert(graph.node(at).value.name.clone(), at)
                .is_some()
            {
                return Err("duplicate element");
            }
        }
        Ok(VectorSet {
            graph,
            names,
            projection: header.projection,
            uid,
            attributes,
        })
    }

    /// The graph's invariants (tests).
    pub fn check(&self) -> Result<(), String> {
        if self.names.len() != self.graph.count {
            return Err("map and graph sizes differ".into());
        }
        self.graph.check()
    }
}

/// A neighbour in VLINKS: its element and its distance.
pub type Neighbour<'a> = (&'a [u8], f32);

/// One node read from a file: element, id, vector, and per layer its links (as ids).
pub type LoadedParts = (Element, u64, Stored, Vec<(Vec<u64>, Layer)>);

/// What a file says about a set before its nodes.
pub struct SavedHeader {
    pub dim: usize,
    pub quant: Quant,
    pub m: u32,
    pub projection: Option<(Vec<f32>, usize)>,
}

/// One node as written to a file.
pub struct SavedNode<'a> {
    pub id: u64,
    pub element: &'a Element,
    pub vector: &'a Stored,
    pub layers: Vec<(Vec<u64>, &'a Layer)>,
}

#[cfg(test)]
mod tests;
