//! `embedis._embedis`: the Rust API of the `embedis` crate for Python. A `Server` is a real
//! server on its own thread inside the Python process; `Nodes`, `ReplicaSet` and `Cluster` are
//! groups of them; each server's `clock` and `faults` are the Rust API's, argument for argument.
//! The Python package (`embedis/__init__.py`) re-exports these classes and adds the pytest
//! plugin and the `embedis-server` console script ([`serve`]).
//!
//! Every server object is a view: the server itself belongs to a [`members::Group`] (a lone
//! server is a group of one), shared by the views, so `cluster.nodes[2]` and `nodes[0]` are
//! servers like any other while their group decides when they stop.

use pyo3::prelude::*;

mod clock;
mod convert;
mod faults;
mod group;
mod members;
mod server;

/// Counts allocated bytes for INFO's `used_memory` (and so `maxmemory`), as the
/// `embedis-server` binary does: this library is the process's Rust code in a Python process.
#[global_allocator]
static ALLOCATOR: embedis_core::base::alloc::CountingAllocator<std::alloc::System> =
    embedis_core::base::alloc::CountingAllocator(std::alloc::System);

pyo3::create_exception!(
    _embedis,
    EmbedisError,
    pyo3::exceptions::PyException,
    "A server that could not start or answer, with the reason (Redis's text where Redis has one)."
);

/// Runs redis-server's command line (`embedis-server [config-file] [--option value ...]`) in
/// this process until the server shuts down; returns the exit code. The console script
/// `embedis-server` calls it.
#[pyfunction]
fn serve(py: Python<'_>, args: Vec<String>) -> i32 {
    let code = py.allow_threads(|| embedis::command_line(args));
    if code == std::process::ExitCode::SUCCESS {
        0
    } else {
        1
    }
}

/// The key slot of `key` (CRC16 mod 16384), as cluster clients compute it.
#[pyfunction]
fn slot_of(key: &[u8]) -> u16 {
    embedis::Cluster::slot_of(key)
}

#[pymodule]
fn _embedis(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("EmbedisError", m.py().get_type::<EmbedisError>())?;
    m.add_class::<server::Server>()?;
    m.add_class::<clock::Clock>()?;
    m.add_class::<faults::Faults>()?;
    m.add_class::<group::Nodes>()?;
    m.add_class::<group::ReplicaSet>()?;
    m.add_class::<group::Cluster>()?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(slot_of, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
