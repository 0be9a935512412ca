//! `Server`: one server as Python sees it — a view of a member of a [`Group`] (a lone server is
//! a group of one).

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::clock::Clock;
use crate::convert::{argument, reply};
use crate::faults::Faults;
use crate::members::{read_options, stop, Group, Raise};

/// A server running on its own thread inside this process (see the module's opening).
#[pyclass(module = "embedis._embedis", frozen)]
pub struct Server {
    group: Arc<Group>,
    index: usize,
}

impl Server {
    pub fn view(group: Arc<Group>, index: usize) -> Server {
        Server { group, index }
    }

    fn with<T>(&self, f: impl FnOnce(&embedis::Server) -> T) -> PyResult<T> {
        self.group.with_server(self.index, f).raise()
    }
}

#[pymethods]
impl Server {
    /// Starts a server: a free port on 127.0.0.1 unless `port=`; `password=`, `users={name:
    /// rules}`, `config={parameter: value}` (any Redis parameter), `clock=` (a `Clock`, or
    /// "manual"), `dir=` and `appendonly=True` to keep data on disk, `databases=`, `seed=`.
    #[new]
    #[pyo3(signature = (**options))]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let options = read_options(options)?;
        let group = py.allow_threads(|| options.start_server()).raise()?;
        Ok(Server::view(group, 0))
    }

    /// `redis://127.0.0.1:<port>/`
    #[getter]
    fn url(&self) -> PyResult<String> {
        self.with(embedis::Server::url)
    }

    #[getter]
    fn host(&self) -> PyResult<String> {
        self.with(|s| s.addr().ip().to_string())
    }

    #[getter]
    fn port(&self) -> PyResult<u16> {
        self.with(|s| s.addr().port())
    }

    /// The server's clock (shared with every server started on the same `Clock`).
    #[getter]
    fn clock(&self) -> PyResult<Clock> {
        self.with(|s| Clock {
            inner: s.clock().clone(),
        })
    }

    /// The replication offset: on a primary the bytes of stream it produced, on a replica
    /// those of its primary's stream it applied.
    #[getter]
    fn replication_offset(&self) -> PyResult<u64> {
        self.with(embedis::Server::replication_offset)
    }

    /// True on a replica whose link to its primary is up.
    #[getter]
    fn link_up(&self) -> PyResult<bool> {
        self.with(embedis::Server::link_up)
    }

    /// Faults to inject: errors, latency, closed connections, pauses (see `Faults`).
    #[getter]
    fn faults(&self) -> Faults {
        Faults::new(self.group.clone(), self.index)
    }

    /// Runs one command as the embedding process (no connection, no AUTH) on database `db`
    /// and returns its reply; an error reply raises `EmbedisError` with Redis's text.
    #[pyo3(signature = (*args, db=0))]
    fn command(&self, py: Python<'_>, args: &Bound<'_, PyTuple>, db: usize) -> PyResult<PyObject> {
        let args = args
            .iter()
            .map(|a| argument(&a))
            .collect::<PyResult<Vec<_>>>()?;
        if args.is_empty() {
            return Err(PyValueError::new_err("command() needs the command's name"));
        }
        let group = self.group.clone();
        let index = self.index;
        let value = py
            .allow_threads(move || group.with_server(index, |s| s.command_in(db, &args)))
            .raise()?;
        reply(py, value)
    }

    /// A `redis.Redis` connected to this server (redis-py must be installed); keyword
    /// arguments go to `redis.Redis.from_url`.
    #[pyo3(signature = (**kwargs))]
    fn client(&self, py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<PyObject> {
        let redis = py.import("redis")?;
        let url = self.url()?;
        Ok(redis
            .getattr("Redis")?
            .call_method("from_url", (url,), kwargs)?
            .unbind())
    }

    /// Stops the server and starts it again on the same port with the data it keeps (what it
    /// saved, with `dir=`; else everything), as a restarted redis-server would.
    fn restart(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| self.group.restart()).raise()
    }

    /// Stops the server (its group's every server, for a member of one).
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

    fn __repr__(&self) -> String {
        match self.url() {
            Ok(url) => format!("<embedis.Server {url}>"),
            Err(_) => "<embedis.Server stopped>".to_string(),
        }
    }
}
