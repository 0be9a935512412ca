//! `Server`: one server as Python sees it — a view of a member of a [`Group`] (a lone server is
//! a group of one) — and [`Options`], the keyword arguments every constructor takes, applied
//! to the Rust API's `ServerBuilder`.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::clock::Clock;
use crate::convert::{argument, io_error, reply};
use crate::faults::Faults;
use crate::members::{Group, Members};
use crate::EmbedisError;

/// The keyword arguments of `Server(...)`, `Nodes(...)`, `ReplicaSet(...)` and `Cluster(...)`.
#[derive(Default, Clone)]
pub struct Options {
    port: u16,
    password: Option<String>,
    /// ACL users: name → rules (`"on >secret ~* +@all"`).
    users: Vec<(String, String)>,
    /// Any Redis configuration parameter, as `CONFIG SET` takes it.
    config: Vec<(String, String)>,
    clock: Option<embedis::Clock>,
    /// `"manual"`: each server gets a manual clock of its own.
    manual_clocks: bool,
    dir: Option<String>,
    appendonly: bool,
    databases: Option<usize>,
    seed: Option<u64>,
    verbose: bool,
}

impl Options {
    pub fn from_kwargs(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
        let mut options = Options::default();
        let Some(kwargs) = kwargs else {
            return Ok(options);
        };
        for (name, value) in kwargs.iter() {
            let name: String = name.extract()?;
            options.set(&name, &value)?;
        }
        options.check()?;
        Ok(options)
    }

    fn set(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        match name {
            "port" => self.port = value.extract()?,
            "password" => self.password = value.extract()?,
            "users" => self.users = pairs(value)?,
            "config" => self.config = pairs(value)?,
            "clock" => self.set_clock(value)?,
            "dir" => self.dir = Some(value.str()?.to_string()),
            "appendonly" => self.appendonly = value.extract()?,
            "databases" => self.databases = Some(value.extract()?),
            "seed" => self.seed = Some(value.extract()?),
            "verbose" => self.verbose = value.extract()?,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown option {other:?} (Redis's parameters go in config={{...}})"
                )))
            }
        }
        Ok(())
    }

    /// `clock=`: a `Clock` (shared by every server given it), `"manual"`, `"controllable"` or
    /// `"system"`.
    fn set_clock(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(clock) = value.downcast::<Clock>() {
            self.clock = Some(clock.get().inner.clone());
            return Ok(());
        }
        match value.extract::<String>()?.as_str() {
            "manual" => self.manual_clocks = true,
            "controllable" => self.clock = Some(embedis::Clock::controllable()),
            "system" => self.clock = None,
            other => {
                return Err(PyValueError::new_err(format!(
                    "clock is a Clock, \"manual\", \"controllable\" or \"system\", not {other:?}"
                )))
            }
        }
        Ok(())
    }

    /// One clock for a whole cluster: the given one, or a new manual one for `"manual"`.
    pub fn shared_clock(&self) -> Option<embedis::Clock> {
        match (&self.clock, self.manual_clocks) {
            (Some(clock), _) => Some(clock.clone()),
            (None, true) => Some(embedis::Clock::manual()),
            (None, false) => None,
        }
    }

    /// These options with the clock left to the caller (a cluster puts every node on one).
    pub fn without_clock(&self) -> Options {
        Options {
            clock: None,
            manual_clocks: false,
            ..self.clone()
        }
    }

    /// The builder with these options; a parameter Redis would refuse makes it fail at start.
    pub fn apply(&self, mut builder: embedis::ServerBuilder) -> embedis::ServerBuilder {
        if self.port != 0 {
            builder = builder.port(self.port);
        }
        if let Some(password) = &self.password {
            builder = builder.password(password.clone());
        }
        for (name, rules) in &self.users {
            builder = builder.user(name, rules);
        }
        if let Some(clock) = &self.clock {
            builder = builder.clock(clock.clone());
        } else if self.manual_clocks {
            builder = builder.clock(embedis::Clock::manual());
        }
        if let Some(dir) = &self.dir {
            builder = builder.dir(dir);
        }
        if self.appendonly {
            builder = builder.appendonly(true);
        }
        if let Some(n) = self.databases {
            builder = builder.databases(n);
        }
        if let Some(seed) = self.seed {
            builder = builder.seed(seed);
        }
        if self.verbose {
            builder = builder.verbose();
        }
        for (name, value) in &self.config {
            builder = builder
                .config(name, value)
                .unwrap_or_else(|e| unreachable!("checked by Options::from_kwargs: {e}"));
        }
        builder
    }

    /// Refuses a configuration parameter as Redis would, with its error, before any server
    /// starts (so that `apply` cannot fail).
    fn check(&self) -> PyResult<()> {
        let mut builder = embedis::Server::builder();
        for (name, value) in &self.config {
            builder = builder.config(name, value).map_err(EmbedisError::new_err)?;
        }
        Ok(())
    }
}

/// A dict's items as string pairs.
fn pairs(value: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let dict = value.downcast::<PyDict>()?;
    dict.iter()
        .map(|(k, v)| Ok((k.str()?.to_string(), v.str()?.to_string())))
        .collect()
}

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
        self.group.with_server(self.index, f)
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
        let options = Options::from_kwargs(options)?;
        let builder = options.apply(embedis::Server::builder());
        let server = py.allow_threads(|| builder.start()).map_err(io_error)?;
        Ok(Server::view(Group::new(Members::One(server)), 0))
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
        let value =
            py.allow_threads(move || group.with_server(index, |s| s.command_in(db, &args)))?;
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
        let group = self.group.clone();
        py.allow_threads(move || {
            group.with(|m| match m {
                Members::One(server) => server.restart().map_err(io_error),
                _ => Err(EmbedisError::new_err(
                    "a member of a group restarts with its group",
                )),
            })
        })?
    }

    /// Stops the server (its group's every server, for a member of one).
    fn shutdown(&self, py: Python<'_>) {
        self.group.stop(py);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) {
        self.group.stop(py);
    }

    fn __repr__(&self) -> String {
        match self.url() {
            Ok(url) => format!("<embedis.Server {url}>"),
            Err(_) => "<embedis.Server stopped>".to_string(),
        }
    }
}
