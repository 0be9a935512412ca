//! Who owns the servers: a [`Group`] — one server, `Nodes`, a `ReplicaSet` or a `Cluster` —
//! shared by the Python objects that show its members. A member is found by its index at each
//! call, so `replica_set.primary` is the primary of the moment, after a failover too. The
//! Python classes are in `server` (one server) and `group` (the groups); this file imports
//! neither.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::EmbedisError;

/// The servers of a group, while it runs.
pub enum Members {
    One(embedis::Server),
    Nodes(embedis::Nodes),
    /// Index 0 is the primary, 1.. the replicas.
    Replicas(embedis::ReplicaSet),
    Cluster(embedis::Cluster),
}

pub struct Group {
    members: Mutex<Option<Members>>,
    /// Cluster nodes stopped by `kill`: their views answer an error instead of panicking.
    killed: Mutex<HashSet<usize>>,
}

impl Group {
    pub fn new(members: Members) -> Arc<Group> {
        Arc::new(Group {
            members: Mutex::new(Some(members)),
            killed: Mutex::new(HashSet::new()),
        })
    }

    /// Runs `f` on the whole group; an error once it has stopped.
    pub fn with<T>(&self, f: impl FnOnce(&mut Members) -> T) -> PyResult<T> {
        let mut members = self.members.lock();
        match members.as_mut() {
            Some(members) => Ok(f(members)),
            None => Err(EmbedisError::new_err("the server has stopped")),
        }
    }

    /// Runs `f` on member `index`.
    pub fn with_server<T>(
        &self,
        index: usize,
        f: impl FnOnce(&embedis::Server) -> T,
    ) -> PyResult<T> {
        if self.killed.lock().contains(&index) {
            return Err(EmbedisError::new_err("the node was killed"));
        }
        self.with(|members| match members {
            Members::One(server) => Some(f(server)),
            Members::Nodes(nodes) => nodes.iter().nth(index).map(f),
            Members::Replicas(set) => match index {
                0 => Some(f(set.primary())),
                i => set.replicas().get(i - 1).map(f),
            },
            Members::Cluster(cluster) => cluster.nodes().get(index).map(f),
        })?
        .ok_or_else(|| EmbedisError::new_err(format!("no server {index} in this group")))
    }

    /// How many members it has now.
    pub fn len(&self) -> PyResult<usize> {
        self.with(|members| match members {
            Members::One(_) => 1,
            Members::Nodes(nodes) => nodes.len(),
            Members::Replicas(set) => 1 + set.replicas().len(),
            Members::Cluster(cluster) => cluster.nodes().len(),
        })
    }

    /// Stops every member (nothing if stopped already).
    pub fn stop(&self, py: Python<'_>) {
        let members = self.members.lock().take();
        py.allow_threads(move || match members {
            Some(Members::One(server)) => server.shutdown(),
            Some(Members::Nodes(nodes)) => nodes.shutdown(),
            Some(Members::Replicas(set)) => drop(set),
            Some(Members::Cluster(cluster)) => cluster.shutdown(),
            None => {}
        });
    }

    /// Node `index` was killed (`Cluster.kill`).
    pub fn mark_killed(&self, index: usize) {
        self.killed.lock().insert(index);
    }
}
