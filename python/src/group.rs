//! The groups as Python classes: `Nodes`, `ReplicaSet` and `Cluster`, each owning its servers
//! through a [`Group`] whose members are shown as `Server` views.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PySlice, PyTuple};

use crate::convert::duration;
use crate::members::{read_options, stop, Group, Raise};
use crate::server::Server;

/// Views of members `0..len` of `group`.
fn views(group: &Arc<Group>, range: std::ops::Range<usize>) -> Vec<Server> {
    range
        .map(|index| Server::view(group.clone(), index))
        .collect()
}

/// `n` independent servers (five for a Redlock test), each with its own clock unless
/// `clock=` gives them one. A sequence: `len(nodes)`, `nodes[i]`, `for server in nodes`.
#[pyclass(module = "embedis._embedis", frozen)]
pub struct Nodes {
    group: Arc<Group>,
}

#[pymethods]
impl Nodes {
    #[new]
    #[pyo3(signature = (n=5, **options))]
    fn new(py: Python<'_>, n: usize, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let options = read_options(options)?;
        let group = py.allow_threads(|| options.start_nodes(n)).raise()?;
        Ok(Nodes { group })
    }

    fn __len__(&self) -> PyResult<usize> {
        self.group.size().raise()
    }

    /// `nodes[i]` (negative from the end) or `nodes[a:b]` (a list).
    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let len = self.group.size().raise()?;
        if let Ok(slice) = index.downcast::<PySlice>() {
            let range = slice.indices(len as isize)?;
            let picked: Vec<Server> = (0..range.slicelength)
                .map(|k| range.start + k as isize * range.step)
                .map(|i| Server::view(self.group.clone(), i as usize))
                .collect();
            return Ok(picked.into_pyobject(py)?.into_any().unbind());
        }
        let index: isize = index.extract()?;
        let i = if index < 0 {
            index + len as isize
        } else {
            index
        };
        if !(0..len as isize).contains(&i) {
            return Err(pyo3::exceptions::PyIndexError::new_err(
                "node index out of range",
            ));
        }
        let view = Server::view(self.group.clone(), i as usize);
        Ok(view.into_pyobject(py)?.into_any().unbind())
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PyObject> {
        let list = views(&self.group, 0..self.group.size().raise()?).into_pyobject(py)?;
        Ok(list.try_iter()?.into_any().unbind())
    }

    /// Every node's `redis://` URL.
    #[getter]
    fn urls(&self) -> PyResult<Vec<String>> {
        self.group.with_nodes(|nodes| nodes.urls()).raise()
    }

    /// Moves every node's clock on by `by` (each scaled by its clock's rate).
    fn advance(&self, by: &Bound<'_, PyAny>) -> PyResult<()> {
        let by = duration(by)?;
        self.group.with_nodes(|nodes| nodes.advance(by)).raise()
    }

    fn shutdown(&self, py: Python<'_>) {
        stop(py, &self.group);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) {
        stop(py, &self.group);
    }
}

/// A primary and `replicas` replicas of it, linked when the constructor returns.
#[pyclass(module = "embedis._embedis", frozen)]
pub struct ReplicaSet {
    group: Arc<Group>,
}

#[pymethods]
impl ReplicaSet {
    #[new]
    #[pyo3(signature = (replicas=2, **options))]
    fn new(py: Python<'_>, replicas: usize, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let options = read_options(options)?;
        let group = py
            .allow_threads(|| options.start_replica_set(replicas))
            .raise()?;
        Ok(ReplicaSet { group })
    }

    /// The current primary.
    #[getter]
    fn primary(&self) -> Server {
        Server::view(self.group.clone(), 0)
    }

    /// The current replicas, in start order.
    #[getter]
    fn replicas(&self) -> PyResult<Vec<Server>> {
        Ok(views(&self.group, 1..self.group.size().raise()?))
    }

    /// Replica `i` (in start order).
    fn replica(&self, i: usize) -> PyResult<Server> {
        if i + 1 >= self.group.size().raise()? {
            return Err(pyo3::exceptions::PyIndexError::new_err("no such replica"));
        }
        Ok(Server::view(self.group.clone(), i + 1))
    }

    /// Waits until every replica has applied all the primary wrote; False after `timeout`.
    #[pyo3(signature = (timeout=None))]
    fn wait_for_replicas(
        &self,
        py: Python<'_>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let timeout = match timeout {
            Some(t) => duration(t)?,
            None => std::time::Duration::from_secs(10),
        };
        py.allow_threads(|| {
            self.group
                .with_replica_set(|set| set.wait_for_replicas(timeout))
        })
        .raise()
    }

    /// What Sentinel does when the primary fails: the primary stops, replica `to` is promoted
    /// and the others follow it.
    fn fail_over(&self, py: Python<'_>, to: usize) -> PyResult<()> {
        py.allow_threads(|| self.group.fail_over_replica_set(to))
            .raise()
    }

    fn shutdown(&self, py: Python<'_>) {
        stop(py, &self.group);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) {
        stop(py, &self.group);
    }
}

/// A Redis Cluster of in-process nodes: `shards` primaries with the slots split as
/// `redis-cli --cluster create` splits them, `replicas` replicas each. With `clock=` (a
/// `Clock`, or "manual") every node runs on that clock, and `advance_clock` drives failure
/// detection and elections.
#[pyclass(module = "embedis._embedis", frozen)]
pub struct Cluster {
    group: Arc<Group>,
}

impl Cluster {
    fn cluster<T>(&self, f: impl FnOnce(&mut embedis::Cluster) -> T) -> PyResult<T> {
        self.group.with_cluster(f).raise()
    }

    /// Runs `f` on the cluster without holding the GIL (it waits for the cluster's nodes).
    fn cluster_unlocked<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut embedis::Cluster) -> std::io::Result<T> + Send,
    ) -> PyResult<T> {
        py.allow_threads(|| self.group.with_cluster(f))
            .raise()?
            .raise()
    }
}

#[pymethods]
impl Cluster {
    #[new]
    #[pyo3(signature = (shards=3, replicas=0, **options))]
    fn new(
        py: Python<'_>,
        shards: usize,
        replicas: usize,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let options = read_options(options)?;
        let group = py
            .allow_threads(|| options.start_cluster(shards, replicas))
            .raise()?;
        Ok(Cluster { group })
    }

    /// Every node: the primaries first (index = shard), then the replicas.
    #[getter]
    fn nodes(&self) -> PyResult<Vec<Server>> {
        Ok(views(&self.group, 0..self.group.size().raise()?))
    }

    /// The primaries as started (index = shard).
    #[getter]
    fn primaries(&self) -> PyResult<Vec<Server>> {
        let shards = self.cluster(|c| c.primaries().len())?;
        Ok(views(&self.group, 0..shards))
    }

    fn node(&self, index: usize) -> Server {
        Server::view(self.group.clone(), index)
    }

    fn node_id(&self, index: usize) -> PyResult<String> {
        self.cluster(|c| c.node_id(index).to_string())
    }

    /// `(host, port)` of every node, for a cluster client's startup nodes.
    #[getter]
    fn startup_nodes(&self) -> PyResult<Vec<(String, u16)>> {
        self.cluster(|c| {
            c.startup_nodes()
                .iter()
                .map(|a| (a.ip().to_string(), a.port()))
                .collect()
        })
    }

    #[getter]
    fn urls(&self) -> PyResult<Vec<String>> {
        self.cluster(|c| c.urls())
    }

    #[staticmethod]
    fn slot_of(key: &[u8]) -> u16 {
        embedis::Cluster::slot_of(key)
    }

    /// The index of the node serving `slot`.
    fn owner_of(&self, slot: u16) -> PyResult<usize> {
        self.cluster(|c| c.owner_of(slot))
    }

    /// A coordinated failover of `shard` to its replica (CLUSTER FAILOVER); returns the index
    /// of the new primary.
    fn fail_over(&self, py: Python<'_>, shard: usize) -> PyResult<usize> {
        self.cluster_unlocked(py, |c| c.fail_over(shard))
    }

    /// Stops node `index` at once, as SIGKILL would; the cluster finds out by itself.
    fn kill(&self, py: Python<'_>, index: usize) -> PyResult<()> {
        py.allow_threads(|| self.group.kill(index)).raise()
    }

    /// Moves the cluster's clock (`clock=` at start) on by `by`, in 100 ms steps.
    fn advance_clock(&self, py: Python<'_>, by: &Bound<'_, PyAny>) -> PyResult<()> {
        let by = duration(by)?;
        py.allow_threads(|| self.group.advance_cluster_clock(by))
            .raise()
    }

    /// Waits until every live node agrees on the slots' owners.
    fn wait_consistent(&self, py: Python<'_>) -> PyResult<()> {
        self.cluster_unlocked(py, |c| c.wait_consistent())
    }

    /// Waits until every live node routes `slot` to node `index`.
    fn wait_for_owner(&self, py: Python<'_>, slot: u16, index: usize) -> PyResult<()> {
        self.cluster_unlocked(py, |c| c.wait_for_owner(slot, index))
    }

    fn begin_migration(&self, slot: u16, source: usize, target: usize) -> PyResult<()> {
        self.cluster(|c| c.begin_migration(slot, source, target))?
            .raise()
    }

    fn migrate_key(&self, key: &str, source: usize, target: usize) -> PyResult<()> {
        self.cluster(|c| c.migrate_key(key, source, target))?
            .raise()
    }

    fn finish_migration(&self, slot: u16, source: usize, target: usize) -> PyResult<()> {
        self.cluster(|c| c.finish_migration(slot, source, target))?
            .raise()
    }

    /// A `redis.cluster.RedisCluster` on this cluster (redis-py must be installed).
    #[pyo3(signature = (**kwargs))]
    fn client(&self, py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<PyObject> {
        let module = py.import("redis.cluster")?;
        let node_type = module.getattr("ClusterNode")?;
        let nodes = self
            .startup_nodes()?
            .into_iter()
            .map(|(host, port)| node_type.call1((host, port)))
            .collect::<PyResult<Vec<_>>>()?;
        let kwargs = match kwargs {
            Some(k) => k.copy()?,
            None => PyDict::new(py),
        };
        kwargs.set_item("startup_nodes", nodes)?;
        Ok(module
            .getattr("RedisCluster")?
            .call((), Some(&kwargs))?
            .unbind())
    }

    fn shutdown(&self, py: Python<'_>) {
        stop(py, &self.group);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) {
        stop(py, &self.group);
    }
}
