//! Pub/sub state: who listens to which channel, pattern and shard channel, on both sides — the
//! server's index from a name to its subscribers ([`PubSub`], in [`crate::model::state::ServerState`])
//! and each client's own sets ([`Subscriptions`], in [`crate::model::client::ClientState`]). The
//! output-buffer limits that protect the server from subscribers that stop reading are the
//! client's ([`crate::model::client::over_limit`]).
//!
//! Delivery order follows Redis 7.0: a channel's subscribers in the order they subscribed, then
//! the subscribers of every matching pattern (patterns in the order they were first subscribed —
//! Redis walks its pattern hash table, whose order is not defined; ours is deterministic), each
//! pattern's subscribers in subscription order. A client's own sets keep insertion order, which
//! is the order in which UNSUBSCRIBE without arguments reports them (Redis walks a hash table
//! there too, so only single-name cases are comparable byte for byte).
//!
//! The engine keeps both sides consistent: [`PubSub::subscribe`] / [`PubSub::unsubscribe`] are
//! called only when the client's own set changed, and
//! [`crate::model::client::unsubscribe_all`] runs when a client disconnects or is RESET.

use bytes::Bytes;
use indexmap::{IndexMap, IndexSet};
use std::collections::HashMap;

use crate::model::client_id::ClientId;

type Names = IndexSet<Bytes, ahash::RandomState>;

/// The three kinds of subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    /// The first element of a subscribe confirmation.
    pub fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    /// The first element of an unsubscribe confirmation.
    pub fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

/// One client's subscriptions, in the order it made them.
#[derive(Default)]
pub struct Subscriptions {
    pub channels: Names,
    pub patterns: Names,
    pub shard: Names,
}

impl Subscriptions {
    pub fn of(&self, kind: Kind) -> &Names {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard,
        }
    }

    pub fn of_mut(&mut self, kind: Kind) -> &mut Names {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// Every subscription: a client with any is in "subscribe mode" (CLIENT LIST flag `P`, and
    /// RESP2 clients may send only the pub/sub commands).
    pub fn total(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard.len()
    }

    /// The count a confirmation carries: channels and patterns together (Redis counts them as
    /// one), shard channels on their own.
    pub fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Channel | Kind::Pattern => self.channels.len() + self.patterns.len(),
            Kind::Shard => self.shard.len(),
        }
    }
}

/// The server's index: name → subscribers in subscription order.
#[derive(Default)]
pub struct PubSub {
    channels: HashMap<Bytes, Vec<ClientId>, ahash::RandomState>,
    patterns: IndexMap<Bytes, Vec<ClientId>, ahash::RandomState>,
    shard: HashMap<Bytes, Vec<ClientId>, ahash::RandomState>,
}

impl PubSub {
    /// Adds `id` to the subscribers of `name` (the caller checked it was not one already).
    pub fn subscribe(&mut self, kind: Kind, name: &Bytes, id: ClientId) {
        match kind {
            Kind::Channel => self.channels.entry(name.clone()).or_default().push(id),
            Kind::Pattern => self.patterns.entry(name.clone()).or_default().push(id),
            Kind::Shard => self.shard.entry(name.clone()).or_default().push(id),
        }
    }

    /// Removes `id` from the subscribers of `name`; a name nobody listens to any more is
    /// forgotten (PUBSUB CHANNELS lists only active channels).
    pub fn unsubscribe(&mut self, kind: Kind, name: &[u8], id: ClientId) {
        fn remove(list: &mut Vec<ClientId>, id: ClientId) -> bool {
            if let Some(at) = list.iter().position(|&c| c == id) {
                list.remove(at);
            }
            list.is_empty()
        }
        match kind {
            Kind::Channel => {
                if self.channels.get_mut(name).is_some_and(|l| remove(l, id)) {
                    self.channels.remove(name);
                }
            }
            Kind::Pattern => {
                if self.patterns.get_mut(name).is_some_and(|l| remove(l, id)) {
                    self.patterns.shift_remove(name);
                }
            }
            Kind::Shard => {
                if self.shard.get_mut(name).is_some_and(|l| remove(l, id)) {
                    self.shard.remove(name);
                }
            }
        }
    }

    /// The subscribers of channel `name` (of the shard channel, if `shard`).
    pub fn subscribers(&self, name: &[u8], shard: bool) -> &[ClientId] {
        let map = if shard { &self.shard } else { &self.channels };
        map.get(name).map_or(&[], Vec::as_slice)
    }

    /// The patterns matching `channel` with their subscribers, in pattern order.
    pub fn matching_patterns<'a>(
        &'a self,
        channel: &'a [u8],
    ) -> impl Iterator<Item = (&'a Bytes, &'a [ClientId])> + 'a {
        self.patterns
            .iter()
            .filter(move |(p, _)| embedis_datatypes::glob::matches(p, channel, false))
            .map(|(p, ids)| (p, ids.as_slice()))
    }

    /// Number of channels (or shard channels) with at least one subscriber.
    pub fn channel_count(&self, shard: bool) -> usize {
        if shard {
            self.shard.len()
        } else {
            self.channels.len()
        }
    }

    /// Number of patterns with at least one subscriber (PUBSUB NUMPAT, INFO pubsub_patterns).
    pub fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// The active channels (or shard channels) matching `pattern` (all if `None`).
    pub fn channel_names(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<&Bytes> {
        let map = if shard { &self.shard } else { &self.channels };
        map.keys()
            .filter(|name| pattern.is_none_or(|p| embedis_datatypes::glob::matches(p, name, false)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn index_keeps_subscription_order_and_forgets_empty_names() {
        let mut ps = PubSub::default();
        ps.subscribe(Kind::Channel, &b("news"), 3);
        ps.subscribe(Kind::Channel, &b("news"), 1);
        ps.subscribe(Kind::Channel, &b("news"), 2);
        assert_eq!(ps.subscribers(b"news", false), &[3, 1, 2]);
        ps.unsubscribe(Kind::Channel, b"news", 1);
        assert_eq!(ps.subscribers(b"news", false), &[3, 2]);
        assert_eq!(ps.channel_count(false), 1);
        ps.unsubscribe(Kind::Channel, b"news", 3);
        ps.unsubscribe(Kind::Channel, b"news", 2);
        assert_eq!(ps.channel_count(false), 0);
        assert!(ps.subscribers(b"news", false).is_empty());
        // Shard channels are a separate namespace.
        ps.subscribe(Kind::Shard, &b("news"), 9);
        assert!(ps.subscribers(b"news", false).is_empty());
        assert_eq!(ps.subscribers(b"news", true), &[9]);
    }

    #[test]
    fn patterns_match_with_redis_globs_in_pattern_order() {
        let mut ps = PubSub::default();
        ps.subscribe(Kind::Pattern, &b("n*"), 1);
        ps.subscribe(Kind::Pattern, &b("x?"), 2);
        ps.subscribe(Kind::Pattern, &b("ne[wv]s"), 3);
        ps.subscribe(Kind::Pattern, &b("n*"), 4);
        let got: Vec<(Bytes, Vec<ClientId>)> = ps
            .matching_patterns(b"news")
            .map(|(p, ids)| (p.clone(), ids.to_vec()))
            .collect();
        assert_eq!(got, vec![(b("n*"), vec![1, 4]), (b("ne[wv]s"), vec![3])]);
        assert_eq!(ps.pattern_count(), 3);
        let mut names = ps.channel_names(false, None);
        names.sort();
        assert!(names.is_empty());
    }

    #[test]
    fn counts_join_channels_and_patterns_but_not_shard_channels() {
        let mut subs = Subscriptions::default();
        subs.channels.insert(b("a"));
        subs.patterns.insert(b("p*"));
        subs.shard.insert(b("s"));
        assert_eq!(subs.count(Kind::Channel), 2);
        assert_eq!(subs.count(Kind::Pattern), 2);
        assert_eq!(subs.count(Kind::Shard), 1);
        assert_eq!(subs.total(), 3);
    }
}
