//! The HNSW proximity graph of a vector set (Malkov & Yashunin), with the choices Redis 8.2's
//! `hnsw.c` makes, because they show through commands and files:
//!
//! - links are **bidirectional** at every layer (the RDB loader rejects a graph whose links are
//!   not, and deletion unlinks a node from exactly its neighbours); layer 0 has room for 2M
//!   links, the others for M; a node keeps its worst link (index and distance) to decide whom
//!   a newcomer may replace;
//! - a new node's level grows with probability 1/4 per level, up to 16; it is linked in
//!   three rounds of growing "aggressiveness" when the diversity rule leaves it with too few
//!   links (see [`Hnsw::select_neighbors`]);
//! - **deletion is real**: the neighbours a node loses are paired among themselves by a score
//!   mixing their similarity with what the pairing costs the others, and the ones left over
//!   are linked through a search ([`Hnsw::reconnect`]);
//! - nodes carry a unique, increasing id (the RDB's link references) and sit in a list,
//!   newest first: the order of RDB files, of exhaustive scans (TRUTH) and of VRANDMEMBER's walk.
//!
//! Nodes live in an arena addressed by `u32` slots. Each node holds a value `V` (the vector
//! set's element name and attributes).

use super::vector::{Quant, Stored};

/// Probability of one more level, and the cap.
const LEVEL_P: f64 = 0.25;
pub const MAX_LEVEL: u32 = 16;
/// Candidates kept while exploring one layer.
const MAX_CANDIDATES: usize = 256;
/// The exploration factor of searches made while reconnecting after a deletion.
const EF_RECONNECT: usize = 200;
pub const MIN_M: u32 = 4;
pub const MAX_M: u32 = 4096;

/// One layer of a node: its links and the worst of them.
#[derive(Clone, Debug)]
pub struct Layer {
    pub links: Vec<u32>,
    pub max_links: u32,
    pub worst_distance: f32,
    pub worst_idx: u32,
}

#[derive(Clone, Debug)]
pub struct Node<V> {
    pub id: u64,
    pub vector: Stored,
    pub layers: Vec<Layer>,
    pub value: V,
    prev: Option<u32>,
    next: Option<u32>,
    visited: u32,
}

impl<V> Node<V> {
    pub fn level(&self) -> u32 {
        self.layers.len() as u32 - 1
    }
}

/// A bounded list of (distance, node), nearest first; a full list drops its farthest. Ties
/// are ordered as Redis's queue orders them: while the list has room, the one pushed last
/// comes first among equal distances; once it is full, after them (Redis shifts items from
/// the other end of its array to make room).
struct Queue {
    items: Vec<(f32, u32)>,
    cap: usize,
}

impl Queue {
    fn new(cap: usize) -> Queue {
        Queue {
            items: Vec::with_capacity(cap.min(1024)),
            cap,
        }
    }

    fn push(&mut self, node: u32, distance: f32) {
        let at = if self.items.len() >= self.cap {
            match self.items.last() {
                Some(&(worst, _)) if distance < worst => {
                    self.items.pop();
                }
                _ => return,
            }
            // Full: after every item as near as `distance`.
            self.items.partition_point(|&(d, _)| d <= distance)
        } else {
            // Room left: after every item nearer than `distance`, before the equal ones.
            self.items.partition_point(|&(d, _)| d < distance)
        };
        self.items.insert(at, (distance, node));
    }

    fn pop_nearest(&mut self) -> Option<(f32, u32)> {
        if self.items.is_empty() {
            None
        } else {
            Some(self.items.remove(0))
        }
    }

    fn farthest(&self) -> f32 {
        self.items.last().map_or(f32::INFINITY, |&(d, _)| d)
    }

    fn len(&self) -> usize {
        self.items.len()
    }
}

/// The graph.
#[derive(Clone, Debug)]
pub struct Hnsw<V> {
    pub dim: usize,
    pub quant: Quant,
    pub m: u32,
    nodes: Vec<Option<Node<V>>>,
    free: Vec<u32>,
    pub entry: Option<u32>,
    pub max_level: u32,
    pub head: Option<u32>,
    pub count: usize,
    pub last_id: u64,
    epoch: u32,
    rng: u64,
}

/// A search's result: (distance, node), nearest first.
pub type Found = Vec<(f32, u32)>;

impl<V> Hnsw<V> {
    pub fn new(dim: usize, quant: Quant, m: u32, seed: u64) -> Hnsw<V> {
        Hnsw {
            dim,
            quant,
            m,
            nodes: Vec::new(),
            free: Vec::new(),
            entry: None,
            max_level: 0,
            head: None,
            count: 0,
            last_id: 0,
            epoch: 0,
            rng: seed | 1,
        }
    }

    pub fn node(&self, at: u32) -> &Node<V> {
        self.nodes[at as usize].as_ref().expect("live node")
    }

    pub fn node_mut(&mut self, at: u32) -> &mut Node<V> {
        self.nodes[at as usize].as_mut().expect("live node")
    }

    /// The nodes in list order, newest first.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(self.head, move |&n| self.node(n).next)
    }

    /// Next of `at` in list order (for VRANDMEMBER's walk).
    pub fn next_of(&self, at: u32) -> Option<u32> {
        self.node(at).next
    }

    /// xorshift64*: the level choice and random walks need no better.
    pub fn random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn random_level(&mut self) -> u32 {
        let mut level = 0;
        while level < MAX_LEVEL && (self.random() >> 11) as f64 / ((1u64 << 53) as f64) < LEVEL_P {
            level += 1;
        }
        level
    }

    fn distance(&self, a: u32, b: u32) -> f32 {
        self.node(a).vector.distance(&self.node(b).vector, self.dim)
    }

    fn distance_to(&self, query: &Stored, b: u32) -> f32 {
        query.distance(&self.node(b).vector, self.dim)
    }

    fn alloc(&mut self, node: Node<V>) -> u32 {
        match self.free.pop() {
            Some(at) => {
                self.nodes[at as usize] = Some(node);
                at
            }
            None => {
                self.nodes.push(Some(node));
                (self.nodes.len() - 1) as u32
            }
        }
    }

    fn new_layers(&self, level: u32) -> Vec<Layer> {
        (0..=level)
            .map(|l| Layer {
                links: Vec::new(),
                max_links: if l == 0 { self.m * 2 } else { self.m },
                worst_distance: 0.0,
                worst_idx: 0,
            })
            .collect()
    }

    /// Puts a node at the head of the list.
    fn link_in_list(&mut self, at: u32) {
        let old = self.head;
        {
            let n = self.node_mut(at);
            n.next = old;
            n.prev = None;
        }
        if let Some(old) = old {
            self.node_mut(old).prev = Some(at);
        }
        self.head = Some(at);
        self.count += 1;
    }

    // -----------------------------------------------------------------------------------------
    // Search
    // -----------------------------------------------------------------------------------------

    /// Explores `layer` from `entry` and returns up to `ef` nodes near `query`. With a filter,
    /// nodes that fail it are explored but not returned, and at most `max_effort` candidates
    /// (0: no bound) are evaluated.
    fn search_layer(
        &mut self,
        query: &Stored,
        entry: u32,
        ef: usize,
        layer: usize,
        mut filter: Option<&mut dyn FnMut(&V) -> bool>,
        max_effort: usize,
    ) -> Queue {
        self.epoch = self.epoch.wrapping_add(1);
        let epoch = self.epoch;
        let mut candidates = Queue::new(MAX_CANDIDATES);
        let mut results = Queue::new(ef);
        let mut evaluated = 1usize;
        let d = self.distance_to(query, entry);
        candidates.push(entry, d);
        let accept = |f: &mut Option<&mut dyn FnMut(&V) -> bool>, v: &V| match f {
            None => true,
            Some(f) => f(v),
        };
        if accept(&mut filter, &self.node(entry).value) {
            results.push(entry, d);
        }
        self.node_mut(entry).visited = epoch;
        while let Some((cur_dist, current)) = {
            if filter.is_some() && max_effort > 0 && evaluated >= max_effort {
                None
            } else {
                candidates.pop_nearest()
            }
        } {
            evaluated += 1;
            if results.len() >= ef && cur_dist > results.farthest() {
                break;
            }
            let links = self.node(current).layers[layer].links.clone();
            for n in links {
                if self.node(n).visited == epoch {
                    continue;
                }
                self.node_mut(n).visited = epoch;
                let nd = self.distance_to(query, n);
                let furthest = results.farthest();
                if filter.is_none() {
                    if nd < furthest || results.len() < ef {
                        candidates.push(n, nd);
                        results.push(n, nd);
                    }
                } else {
                    if nd < furthest || candidates.len() < ef {
                        candidates.push(n, nd);
                    }
                    if accept(&mut filter, &self.node(n).value)
                        && (nd < furthest || results.len() < ef)
                    {
                        results.push(n, nd);
                    }
                }
            }
        }
        results
    }

    /// The entry point for `layer`: greedy descent from the top with one candidate per layer.
    fn descend(&mut self, query: &Stored, down_to: u32) -> Option<u32> {
        let mut ep = self.entry?;
        let mut lc = self.max_level;
        while lc > down_to {
            let r = self.search_layer(query, ep, 1, lc as usize, None, 0);
            if let Some(&(_, n)) = r.items.first() {
                ep = n;
            }
            lc -= 1;
        }
        Some(ep)
    }

    /// The `k` nodes nearest `query` (a vector of `dim` floats), nearest first; with a filter,
    /// only nodes whose value passes it, exploring at most `max_effort` candidates.
    pub fn search(
        &mut self,
        query: &[f32],
        k: usize,
        filter: Option<&mut dyn FnMut(&V) -> bool>,
        max_effort: usize,
    ) -> Found {
        if k == 0 {
            return Vec::new();
        }
        let q = Stored::query(query, self.quant);
        let Some(ep) = self.descend(&q, 0) else {
            return Vec::new();
        };
        let r = self.search_layer(&q, ep, k, 0, filter, max_effort);
        r.items.into_iter().take(k).collect()
    }

    /// The exact `k` nearest by a scan of every node in list order (VSIM TRUTH).
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        mut filter: Option<&mut dyn FnMut(&V) -> bool>,
    ) -> Found {
        let q = Stored::query(query, self.quant);
        let mut results = Queue::new(k);
        for n in self.iter() {
            if let Some(f) = filter.as_mut() {
                if !f(&self.node(n).value) {
                    continue;
                }
            }
            results.push(n, self.distance_to(&q, n));
        }
        results.items
    }

    // -----------------------------------------------------------------------------------------
    // Insertion
    // -----------------------------------------------------------------------------------------

    /// Inserts a vector with its value and returns the node's slot.
    pub fn insert(&mut self, vector: Vec<f32>, value: V, ef: usize) -> u32 {
        let level = self.random_level();
        let stored = Stored::from_floats(vector, self.quant);
        self.last_id += 1;
        let node = Node {
            id: self.last_id,
            vector: stored,
            layers: self.new_layers(level),
            value,
            prev: None,
            next: None,
            visited: 0,
        };
        let at = self.alloc(node);
        self.connect(at, ef);
        at
    }

    /// Links a node not yet in the graph, then adds it to the list (and makes it the entry
    /// point if it is the highest).
    fn connect(&mut self, at: u32, ef: usize) {
        let level = self.node(at).level();
        if let Some(mut ep) = self.entry {
            let query = self.node(at).vector.clone();
            let mut lc = self.max_level;
            while lc > level {
                let r = self.search_layer(&query, ep, 1, lc as usize, None, 0);
                if let Some(&(_, n)) = r.items.first() {
                    ep = n;
                }
                lc -= 1;
            }
            let top = level.min(self.max_level);
            let mut queues = Vec::with_capacity(top as usize + 1);
            for lc in (0..=top).rev() {
                let c = self.search_layer(&query, ep, ef, lc as usize, None, 0);
                if let Some(&(_, n)) = c.items.first() {
                    ep = n;
                }
                queues.push((lc, c.items));
            }
            let m = self.m as usize;
            for (lc, cands) in queues {
                let lc = lc as usize;
                self.select_neighbors(&cands, at, lc, m, 0);
                if lc == 0 && self.node(at).layers[0].links.len() < m / 2 {
                    self.select_neighbors(&cands, at, lc, m, 1);
                    if self.node(at).layers[0].links.len() < m / 4 {
                        self.select_neighbors(&cands, at, lc, m / 4, 2);
                    }
                }
            }
        }
        if self.entry.is_none() || level > self.max_level {
            self.entry = Some(at);
            self.max_level = level;
        }
        self.link_in_list(at);
    }

    fn add_link(&mut self, from: u32, to: u32, layer: usize, distance: f32) {
        let l = &mut self.node_mut(from).layers[layer];
        l.links.push(to);
        if l.links.len() == 1 || distance > l.worst_distance {
            l.worst_distance = distance;
            l.worst_idx = (l.links.len() - 1) as u32;
        }
    }

    fn remove_link(&mut self, from: u32, to: u32, layer: usize) {
        let pos = self.node(from).layers[layer]
            .links
            .iter()
            .position(|&n| n == to);
        let Some(j) = pos else { return };
        self.node_mut(from).layers[layer].links.remove(j);
        let l = &self.node(from).layers[layer];
        if l.links.is_empty() {
            let l = &mut self.node_mut(from).layers[layer];
            l.worst_distance = 0.0;
            l.worst_idx = 0;
        } else if j as u32 == l.worst_idx {
            self.update_worst(from, layer);
        } else if (j as u32) < l.worst_idx {
            self.node_mut(from).layers[layer].worst_idx -= 1;
        }
    }

    fn update_worst(&mut self, at: u32, layer: usize) {
        let (mut worst, mut idx) = (0f32, 0u32);
        for (i, &n) in self.node(at).layers[layer].links.iter().enumerate() {
            let d = self.distance(at, n);
            if d > worst {
                worst = d;
                idx = i as u32;
            }
        }
        let l = &mut self.node_mut(at).layers[layer];
        l.worst_distance = worst;
        l.worst_idx = idx;
    }

    fn links_len(&self, at: u32, layer: usize) -> usize {
        self.node(at).layers[layer].links.len()
    }

    /// Links `new` with candidates of `cands` (nearest first) until it has `wanted` links.
    /// Aggressiveness 0 applies the diversity rule (skip a candidate nearer to an accepted
    /// neighbour than to `new`) and replaces a full candidate's worst link only for a nearer
    /// newcomer whose loss leaves the dropped node more than M/2 links; 1 drops the diversity
    /// and quality rules and accepts M/4; 2 also looks for another link to drop, or grows the
    /// candidate's room (up to 3M at layer 0, 2M above).
    fn select_neighbors(
        &mut self,
        cands: &[(f32, u32)],
        new: u32,
        layer: usize,
        wanted: usize,
        aggressive: u8,
    ) {
        let m = self.m as usize;
        for &(dist, cand) in cands {
            if cand == new {
                continue;
            }
            let nl = &self.node(new).layers[layer];
            if nl.links.len() >= nl.max_links as usize || nl.links.len() >= wanted {
                return;
            }
            if aggressive > 0 && nl.links.contains(&cand) {
                continue;
            }
            if aggressive == 0 {
                let diverse = nl.links.iter().all(|&l| self.distance(cand, l) >= dist);
                if !diverse {
                    continue;
                }
            }
            let cl = &self.node(cand).layers[layer];
            if cl.links.len() < cl.max_links as usize {
                self.add_link(cand, new, layer, dist);
                self.add_link(new, cand, layer, dist);
                continue;
            }
            if aggressive == 0 && dist >= cl.worst_distance {
                continue;
            }
            let mut worst = cl.links[cl.worst_idx as usize];
            let worst_links = self.links_len(worst, layer);
            if (aggressive == 0 && worst_links <= m / 2)
                || (aggressive == 1 && worst_links <= m / 4)
            {
                continue;
            }
            if aggressive == 2 && worst_links <= m / 4 {
                match self.droppable_link(cand, layer) {
                    Some((idx, d)) => {
                        let l = &mut self.node_mut(cand).layers[layer];
                        l.worst_idx = idx;
                        l.worst_distance = d;
                        worst = l.links[idx as usize];
                    }
                    None => {
                        let limit = if layer == 0 { m * 3 } else { m * 2 };
                        let l = &mut self.node_mut(cand).layers[layer];
                        if l.max_links as usize >= limit {
                            continue;
                        }
                        l.max_links += 1;
                        self.add_link(cand, new, layer, dist);
                        self.add_link(new, cand, layer, dist);
                        continue;
                    }
                }
            }
            // Replace the candidate's worst link by the newcomer.
            self.remove_link(worst, cand, layer);
            let idx = self.node(cand).layers[layer].worst_idx as usize;
            self.node_mut(cand).layers[layer].links[idx] = new;
            self.update_worst(cand, layer);
            self.add_link(new, cand, layer, dist);
        }
    }

    /// The farthest link of `at` whose target keeps more than M/4 links once dropped.
    fn droppable_link(&self, at: u32, layer: usize) -> Option<(u32, f32)> {
        let m = self.m as usize;
        let mut best: Option<(u32, f32)> = None;
        for (j, &n) in self.node(at).layers[layer].links.iter().enumerate() {
            if self.links_len(n, layer) <= m / 4 {
                continue;
            }
            let d = self.distance(at, n);
            if best.is_none_or(|(_, bd)| d > bd) {
                best = Some((j as u32, d));
            }
        }
        best
    }

    // -----------------------------------------------------------------------------------------
    // Deletion
    // -----------------------------------------------------------------------------------------

    /// Removes a node, reconnects its former neighbours, and returns its value.
    pub fn remove(&mut self, at: u32) -> V {
        let node = self.unlink(at);
        for (layer, l) in node.layers.iter().enumerate() {
            self.reconnect(&l.links, layer);
        }
        node.value
    }

    /// Takes the node out of its neighbours' links, of the list and of the entry point.
    fn unlink(&mut self, at: u32) -> Node<V> {
        let layers = self.node(at).layers.clone();
        for (layer, l) in layers.iter().enumerate() {
            for &n in &l.links {
                self.remove_link(n, at, layer);
            }
        }
        let node = self.nodes[at as usize].take().expect("live node");
        self.free.push(at);
        match node.prev {
            Some(p) => self.node_mut(p).next = node.next,
            None => self.head = node.next,
        }
        if let Some(n) = node.next {
            self.node_mut(n).prev = node.prev;
        }
        self.count -= 1;
        if self.entry == Some(at) {
            self.entry = None;
            self.max_level = 0;
            let replacement = node
                .layers
                .iter()
                .rev()
                .find_map(|l| l.links.first().copied());
            let replacement = replacement.or_else(|| {
                let mut best: Option<u32> = None;
                for n in self.iter() {
                    if best.is_none_or(|b| self.node(n).level() >= self.node(b).level()) {
                        best = Some(n);
                    }
                }
                best
            });
            if let Some(r) = replacement {
                self.entry = Some(r);
                self.max_level = self.node(r).level();
            }
        }
        node
    }

    /// Pairs the nodes that lost a link at `layer`: the best-scoring pairs first (similarity
    /// weighted 0.7, the average distance of the pairs it rules out 0.3), then a search for
    /// each node left over.
    fn reconnect(&mut self, nodes: &[u32], layer: usize) {
        let count = nodes.len();
        if count == 0 {
            return;
        }
        let mut dist = vec![0f32; count * count];
        for i in 0..count {
            for j in i + 1..count {
                let d = self.distance(nodes[i], nodes[j]);
                dist[i * count + j] = d;
                dist[j * count + i] = d;
            }
        }
        let avg: Vec<f32> = (0..count)
            .map(|i| {
                let s: f32 = (0..count)
                    .filter(|&j| j != i)
                    .map(|j| dist[i * count + j])
                    .sum();
                if count > 1 {
                    s / (count - 1) as f32
                } else {
                    0.0
                }
            })
            .collect();
        let mut score = vec![-1f32; count * count];
        for i in 0..count {
            for j in 0..count {
                if i == j || self.node(nodes[i]).layers[layer].links.contains(&nodes[j]) {
                    continue;
                }
                let d = dist[i * count + j];
                let (mut ai, mut aj) = (0f32, 0f32);
                if count > 2 {
                    ai = (avg[i] * (count - 1) as f32 - d) / (count - 2) as f32;
                    aj = (avg[j] * (count - 1) as f32 - d) / (count - 2) as f32;
                }
                score[i * count + j] = 0.7 * (2.0 - d) + 0.3 * ((ai + aj) / 2.0);
            }
        }
        let mut used = vec![false; count];
        let has_room = |h: &Self, n: u32| {
            let l = &h.node(n).layers[layer];
            l.links.len() < l.max_links as usize
        };
        loop {
            let mut best: Option<(usize, usize, f32)> = None;
            for i in 0..count {
                if used[i] || !has_room(self, nodes[i]) {
                    continue;
                }
                for j in 0..count {
                    let s = score[i * count + j];
                    if i == j || used[j] || s < 0.0 {
                        continue;
                    }
                    if best.is_none_or(|(_, _, b)| s > b) && has_room(self, nodes[j]) {
                        best = Some((i, j, s));
                    }
                }
            }
            let Some((i, j, _)) = best else { break };
            let d = dist[i * count + j];
            self.add_link(nodes[i], nodes[j], layer, d);
            self.add_link(nodes[j], nodes[i], layer, d);
            used[i] = true;
            used[j] = true;
        }
        for i in 0..count {
            if used[i] || !has_room(self, nodes[i]) {
                continue;
            }
            self.relink_leftover(nodes, &dist, i, layer);
        }
    }

    /// One more link for a node the pairing left out: first among the other former
    /// neighbours with room, else from a search of the layer.
    fn relink_leftover(&mut self, nodes: &[u32], dist: &[f32], i: usize, layer: usize) {
        let count = nodes.len();
        let me = nodes[i];
        let mut local = Queue::new(count);
        for j in 0..count {
            let l = &self.node(nodes[j]).layers[layer];
            if j != i && l.links.len() < l.max_links as usize {
                local.push(nodes[j], dist[i * count + j]);
            }
        }
        let wanted = self.links_len(me, layer) + 1;
        if local.len() > 0 {
            self.select_neighbors(&local.items, me, layer, wanted, 1);
        }
        if self.links_len(me, layer) == wanted {
            return;
        }
        let query = self.node(me).vector.clone();
        let Some(ep) = self.descend(&query, layer as u32) else {
            return;
        };
        let cands = self.search_layer(&query, ep, EF_RECONNECT, layer, None, 0);
        let aggressive = if self.links_len(me, layer) > self.m as usize / 2 {
            1
        } else {
            2
        };
        self.select_neighbors(&cands.items, me, layer, wanted, aggressive);
    }

    /// Replaces a node's vector: removed and inserted again (a new id), keeping its value.
    pub fn reinsert(&mut self, at: u32, vector: Vec<f32>, ef: usize) -> u32 {
        let value = self.remove(at);
        self.insert(vector, value, ef)
    }

    // -----------------------------------------------------------------------------------------
    // Random walks
    // -----------------------------------------------------------------------------------------

    /// A random pick among `len` choices.
    fn pick(&mut self, len: usize) -> usize {
        (self.random() % len as u64) as usize
    }

    /// A random node: a random descent from the entry point, then 3·log2(N+1) (plus 0 or 1)
    /// random steps at layer 0.
    pub fn random_node(&mut self) -> Option<u32> {
        let mut current = self.entry?;
        let mut level = self.max_level as usize;
        while level > 0 {
            let n = self.node(current);
            let len = n.layers.get(level).map_or(0, |l| l.links.len());
            if len > 0 {
                let i = self.pick(len);
                current = self.node(current).layers[level].links[i];
            }
            level -= 1;
        }
        let walks = ((self.count as f64 + 1.0).log2() * 3.0) as u64 + (self.random() & 1);
        for _ in 0..walks {
            let len = self.node(current).layers[0].links.len();
            if len == 0 {
                break;
            }
            let i = self.pick(len);
            current = self.node(current).layers[0].links[i];
        }
        Some(current)
    }

    // -----------------------------------------------------------------------------------------
    // Loading
    // -----------------------------------------------------------------------------------------

    /// A graph from nodes read from a file, newest first, their links given as node ids.
    /// Each node read goes to the head of the list, as Redis's loader adds it, so the loaded
    /// list is the file's order reversed (a save and a load reverse a set's list order, in
    /// Redis as here: the order of TRUTH scans, VRANDMEMBER's walk and MEMORY USAGE's sample).
    /// Checks what Redis's loader checks: unique non-zero ids, levels within the cap, no link
    /// to itself, no duplicate link, every target present at that level, every link matched by
    /// its backlink. `Err` names the first problem.
    pub fn from_loaded(
        dim: usize,
        quant: Quant,
        m: u32,
        seed: u64,
        loaded: Vec<LoadedNode<V>>,
    ) -> Result<Hnsw<V>, &'static str> {
        use std::collections::{HashMap, HashSet};
        let mut h = Hnsw::new(dim, quant, m, seed);
        let mut by_id: HashMap<u64, u32> = HashMap::with_capacity(loaded.len());
        let mut link_ids = Vec::with_capacity(loaded.len());
        for node in loaded {
            if node.id == 0 || node.layers.is_empty() || node.layers.len() as u32 > MAX_LEVEL + 1 {
                return Err("bad node header");
            }
            h.last_id = h.last_id.max(node.id);
            let level = node.layers.len() as u32 - 1;
            let mut layers = Vec::with_capacity(node.layers.len());
            let mut ids = Vec::with_capacity(node.layers.len());
            for (l, (links, mut layer)) in node.layers.into_iter().enumerate() {
                // Redis allocates a loaded node's layers at their usual room and enlarges
                // them to what the file says only when that is more.
                let usual = if l == 0 { h.m * 2 } else { h.m };
                layer.max_links = layer.max_links.max(usual);
                layers.push(layer);
                ids.push(links);
            }
            let at = h.alloc(Node {
                id: node.id,
                vector: node.vector,
                layers,
                value: node.value,
                prev: None,
                next: None,
                visited: 0,
            });
            h.link_in_list(at);
            if h.entry.is_none() || level > h.max_level {
                h.entry = Some(at);
                h.max_level = level;
            }
            if by_id.insert(node.id, at).is_some() {
                return Err("duplicate node id");
            }
            link_ids.push((at, ids));
        }
        let mut pending: HashSet<(u64, u64, usize)> = HashSet::new();
        for (at, layers) in link_ids {
            let id = h.node(at).id;
            for (layer, ids) in layers.into_iter().enumerate() {
                let mut resolved = Vec::with_capacity(ids.len());
                for linked in ids {
                    if linked == id {
                        return Err("link to itself");
                    }
                    let target = *by_id.get(&linked).ok_or("unresolved link")?;
                    if h.node(target).level() < layer as u32 {
                        return Err("link above the target's level");
                    }
                    if resolved.contains(&target) {
                        return Err("duplicate link");
                    }
                    resolved.push(target);
                    let key = (id.min(linked), id.max(linked), layer);
                    if !pending.remove(&key) {
                        pending.insert(key);
                    }
                }
                h.node_mut(at).layers[layer].links = resolved;
            }
        }
        if !pending.is_empty() {
            return Err("links are not reciprocal");
        }
        Ok(h)
    }

    /// Every link has its backlink and every node is reachable from the entry point (what the
    /// property tests hold the graph to).
    pub fn check(&self) -> Result<(), String> {
        for at in self.iter() {
            for (layer, l) in self.node(at).layers.iter().enumerate() {
                for &n in &l.links {
                    let back = self
                        .node(n)
                        .layers
                        .get(layer)
                        .is_some_and(|b| b.links.contains(&at));
                    if !back {
                        return Err(format!("link {at}->{n} at {layer} has no backlink"));
                    }
                }
                if l.links.len() > l.max_links as usize {
                    return Err(format!("node {at} over its room at {layer}"));
                }
            }
        }
        let Some(entry) = self.entry else {
            return if self.count == 0 {
                Ok(())
            } else {
                Err("no entry point".into())
            };
        };
        if self.node(entry).level() != self.max_level {
            return Err("entry point is not at the top level".into());
        }
        let mut seen = std::collections::HashSet::from([entry]);
        let mut stack = vec![entry];
        while let Some(n) = stack.pop() {
            for l in &self.node(n).layers {
                for &m in &l.links {
                    if seen.insert(m) {
                        stack.push(m);
                    }
                }
            }
        }
        if seen.len() != self.count {
            return Err(format!("{} of {} nodes reachable", seen.len(), self.count));
        }
        Ok(())
    }
}

/// A node as a file holds it: its links per layer as node ids, with the layer's room and
/// worst link.
pub struct LoadedNode<V> {
    pub id: u64,
    pub vector: Stored,
    pub layers: Vec<(Vec<u64>, Layer)>,
    pub value: V,
}

#[cfg(test)]
mod queue_tests {
    use super::Queue;

    #[test]
    fn ties_go_first_while_there_is_room_and_last_once_full() {
        let mut q = Queue::new(3);
        q.push(1, 1.0);
        q.push(2, 1.0);
        q.push(3, 2.0);
        let order = |q: &Queue| q.items.iter().map(|&(_, n)| n).collect::<Vec<_>>();
        assert_eq!(order(&q), [2, 1, 3]);
        q.push(4, 1.0);
        assert_eq!(
            order(&q),
            [2, 1, 4],
            "the farthest went, the newcomer after its equals"
        );
        q.push(5, 1.0);
        assert_eq!(
            order(&q),
            [2, 1, 4],
            "no nearer than the farthest: left out"
        );
        q.push(6, 0.5);
        assert_eq!(order(&q), [6, 2, 1]);
    }
}
