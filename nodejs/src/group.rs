//! `NativeGroup`: servers owned by an `embedis::bindings::Group` — one server, `Nodes`, a
//! `ReplicaSet` or a `Cluster` — with every member's calls taking the member's index. What
//! waits returns an `AsyncTask` (a Promise); the rest answers at once.

use std::sync::Arc;

use embedis::bindings::{Group, Options};
use napi::bindgen_prelude::{AsyncTask, Buffer, Either};
use napi_derive::napi;

use crate::clock::NativeClock;
use crate::convert::{bytes, options, reply, throw, OptionEntry};
use crate::task::Blocking;

#[napi]
pub struct NativeGroup {
    group: Arc<Group>,
}

type Started = AsyncTask<Blocking<NativeGroup>>;

/// Starts a group on the thread pool.
fn start(
    entries: Vec<OptionEntry>,
    clock: Option<&NativeClock>,
    how: impl FnOnce(&Options) -> embedis::bindings::Result<Arc<Group>> + Send + 'static,
) -> napi::Result<Started> {
    let options = options(entries, clock.map(|c| c.inner.clone()))?;
    Ok(AsyncTask::new(Blocking::new(move || {
        how(&options).map(|group| NativeGroup { group })
    })))
}

#[napi]
impl NativeGroup {
    #[napi(ts_return_type = "Promise<NativeGroup>")]
    pub fn start_server(
        entries: Vec<OptionEntry>,
        clock: Option<&NativeClock>,
    ) -> napi::Result<Started> {
        start(entries, clock, |o| o.start_server())
    }

    #[napi(ts_return_type = "Promise<NativeGroup>")]
    pub fn start_nodes(
        n: u32,
        entries: Vec<OptionEntry>,
        clock: Option<&NativeClock>,
    ) -> napi::Result<Started> {
        start(entries, clock, move |o| o.start_nodes(n as usize))
    }

    #[napi(ts_return_type = "Promise<NativeGroup>")]
    pub fn start_replica_set(
        replicas: u32,
        entries: Vec<OptionEntry>,
        clock: Option<&NativeClock>,
    ) -> napi::Result<Started> {
        start(entries, clock, move |o| {
            o.start_replica_set(replicas as usize)
        })
    }

    #[napi(ts_return_type = "Promise<NativeGroup>")]
    pub fn start_cluster(
        shards: u32,
        replicas: u32,
        entries: Vec<OptionEntry>,
        clock: Option<&NativeClock>,
    ) -> napi::Result<Started> {
        start(entries, clock, move |o| {
            o.start_cluster(shards as usize, replicas as usize)
        })
    }

    pub(crate) fn group(&self) -> &Group {
        &self.group
    }

    /// Runs `job` on the thread pool with the group.
    pub(crate) fn wait<R>(
        &self,
        job: impl FnOnce(&Group) -> embedis::bindings::Result<R> + Send + 'static,
    ) -> AsyncTask<Blocking<R>>
    where
        R: napi::bindgen_prelude::ToNapiValue + napi::bindgen_prelude::TypeName + Send + 'static,
    {
        let group = self.group.clone();
        AsyncTask::new(Blocking::new(move || job(&group)))
    }

    pub(crate) fn on_member<T>(
        &self,
        index: u32,
        f: impl FnOnce(&embedis::Server) -> T,
    ) -> napi::Result<T> {
        throw(self.group.with_server(index as usize, f))
    }

    #[napi]
    pub fn size(&self) -> napi::Result<u32> {
        throw(self.group.size()).map(|n| n as u32)
    }

    #[napi]
    pub fn url(&self, index: u32) -> napi::Result<String> {
        self.on_member(index, embedis::Server::url)
    }

    #[napi]
    pub fn host(&self, index: u32) -> napi::Result<String> {
        self.on_member(index, |s| s.addr().ip().to_string())
    }

    #[napi]
    pub fn port(&self, index: u32) -> napi::Result<u16> {
        self.on_member(index, |s| s.addr().port())
    }

    #[napi]
    pub fn clock(&self, index: u32) -> napi::Result<NativeClock> {
        self.on_member(index, |s| NativeClock {
            inner: s.clock().clone(),
        })
    }

    #[napi]
    pub fn replication_offset(&self, index: u32) -> napi::Result<i64> {
        self.on_member(index, |s| s.replication_offset() as i64)
    }

    #[napi]
    pub fn link_up(&self, index: u32) -> napi::Result<bool> {
        self.on_member(index, embedis::Server::link_up)
    }

    /// One command as the embedding process, on database `db`.
    #[napi(ts_return_type = "any")]
    pub fn command(
        &self,
        index: u32,
        db: u32,
        args: Vec<Either<String, Buffer>>,
    ) -> napi::Result<serde_json::Value> {
        let args: Vec<Vec<u8>> = args.iter().map(|a| bytes(a).to_vec()).collect();
        if args.is_empty() {
            return Err(napi::Error::new(
                napi::Status::InvalidArg,
                "command() needs the command's name",
            ));
        }
        reply(self.on_member(index, |s| s.command_in(db as usize, &args))?)
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn restart(&self) -> AsyncTask<Blocking<()>> {
        self.wait(|g| g.restart())
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn shutdown(&self) -> AsyncTask<Blocking<()>> {
        self.wait(|g| {
            g.stop();
            Ok(())
        })
    }
}
