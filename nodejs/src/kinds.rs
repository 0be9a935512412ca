//! What only one kind of group offers: `Nodes` (move every clock), `ReplicaSet` (wait for the
//! replicas, fail over) and `Cluster` (ids, routing, failover, kill, migrations).

use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;

use crate::convert::{millis, throw};
use crate::group::NativeGroup;
use crate::task::Blocking;

/// Runs `f` on the cluster, its I/O error as the crate's.
fn on_cluster<T>(
    group: &embedis::bindings::Group,
    f: impl FnOnce(&mut embedis::Cluster) -> std::io::Result<T>,
) -> embedis::bindings::Result<T> {
    group
        .with_cluster(f)?
        .map_err(embedis::bindings::Error::from)
}

#[napi]
impl NativeGroup {
    #[napi]
    pub fn urls(&self) -> napi::Result<Vec<String>> {
        throw(self.group().with(|m| {
            use embedis::bindings::Members as M;
            match m {
                M::One(s) => vec![s.url()],
                M::Nodes(n) => n.urls(),
                M::Replicas(set) => std::iter::once(set.primary())
                    .chain(set.replicas())
                    .map(embedis::Server::url)
                    .collect(),
                M::Cluster(c) => c.urls(),
            }
        }))
    }

    /// Moves every node's clock on (`Nodes`).
    #[napi]
    pub fn advance_nodes(&self, by_ms: f64) -> napi::Result<()> {
        throw(self.group().with_nodes(|n| n.advance(millis(by_ms))))
    }

    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn wait_for_replicas(&self, timeout_ms: f64) -> AsyncTask<Blocking<bool>> {
        self.wait(move |g| g.with_replica_set(|set| set.wait_for_replicas(millis(timeout_ms))))
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn fail_over_replica_set(&self, to: u32) -> AsyncTask<Blocking<()>> {
        self.wait(move |g| g.fail_over_replica_set(to as usize))
    }

    #[napi]
    pub fn shards(&self) -> napi::Result<u32> {
        throw(self.group().with_cluster(|c| c.primaries().len() as u32))
    }

    #[napi]
    pub fn node_id(&self, index: u32) -> napi::Result<String> {
        throw(
            self.group()
                .with_cluster(|c| c.node_id(index as usize).to_string()),
        )
    }

    #[napi]
    pub fn owner_of(&self, slot: u16) -> napi::Result<u32> {
        throw(self.group().with_cluster(|c| c.owner_of(slot) as u32))
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn fail_over_shard(&self, shard: u32) -> AsyncTask<Blocking<u32>> {
        self.wait(move |g| on_cluster(g, |c| c.fail_over(shard as usize)).map(|i| i as u32))
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn kill(&self, index: u32) -> AsyncTask<Blocking<()>> {
        self.wait(move |g| g.kill(index as usize))
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn advance_cluster_clock(&self, by_ms: f64) -> AsyncTask<Blocking<()>> {
        self.wait(move |g| g.advance_cluster_clock(millis(by_ms)))
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn wait_consistent(&self) -> AsyncTask<Blocking<()>> {
        self.wait(|g| on_cluster(g, |c| c.wait_consistent()))
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn wait_for_owner(&self, slot: u16, index: u32) -> AsyncTask<Blocking<()>> {
        self.wait(move |g| on_cluster(g, |c| c.wait_for_owner(slot, index as usize)))
    }

    #[napi]
    pub fn begin_migration(&self, slot: u16, source: u32, target: u32) -> napi::Result<()> {
        let (s, t) = (source as usize, target as usize);
        throw(on_cluster(self.group(), |c| c.begin_migration(slot, s, t)))
    }

    #[napi]
    pub fn migrate_key(&self, key: String, source: u32, target: u32) -> napi::Result<()> {
        let (s, t) = (source as usize, target as usize);
        throw(on_cluster(self.group(), |c| c.migrate_key(&key, s, t)))
    }

    #[napi]
    pub fn finish_migration(&self, slot: u16, source: u32, target: u32) -> napi::Result<()> {
        let (s, t) = (source as usize, target as usize);
        throw(on_cluster(self.group(), |c| c.finish_migration(slot, s, t)))
    }
}
