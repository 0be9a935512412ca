//! The servers' owners and the constructors' options, from the Rust crate's language-neutral
//! `embedis::bindings` (shared with the Node package): here only what is Python's — keyword
//! arguments read as options, the crate's errors raised as `EmbedisError`, and stopping a
//! group without holding the GIL. The Python classes are in `server` (one server) and `group`
//! (the groups); this file imports neither.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

use embedis::bindings::{Error, OptionValue};
pub use embedis::bindings::{Group, Options};

use crate::clock::Clock;
use crate::EmbedisError;

/// The crate's errors raised with their text: `ValueError` for a mistake in the call,
/// `EmbedisError` for the rest.
pub trait Raise<T> {
    fn raise(self) -> PyResult<T>;
}

impl<T> Raise<T> for Result<T, Error> {
    fn raise(self) -> PyResult<T> {
        self.map_err(|e| match e.usage {
            true => PyValueError::new_err(e.text),
            false => EmbedisError::new_err(e.text),
        })
    }
}

impl<T> Raise<T> for std::io::Result<T> {
    fn raise(self) -> PyResult<T> {
        self.map_err(|e| EmbedisError::new_err(e.to_string()))
    }
}

/// The keyword arguments of `Server(...)`, `Nodes(...)`, `ReplicaSet(...)` and `Cluster(...)`.
pub fn read_options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut pairs = Vec::new();
    for (name, value) in kwargs.into_iter().flat_map(|k| k.iter()) {
        pairs.push((name.extract::<String>()?, option_value(&value)?));
    }
    Options::from_pairs(pairs).raise()
}

/// One keyword argument's value: a `Clock`, a bool, a dict (of `str()`ed values), an int, or
/// anything else as its `str()` (a `pathlib.Path` for `dir=`).
fn option_value(value: &Bound<'_, PyAny>) -> PyResult<OptionValue> {
    Ok(if let Ok(clock) = value.downcast::<Clock>() {
        OptionValue::Clock(clock.get().inner.clone())
    } else if value.is_instance_of::<PyBool>() {
        OptionValue::Bool(value.extract()?)
    } else if let Ok(dict) = value.downcast::<PyDict>() {
        let pairs = dict
            .iter()
            .map(|(k, v)| Ok((k.str()?.to_string(), v.str()?.to_string())))
            .collect::<PyResult<_>>()?;
        OptionValue::Pairs(pairs)
    } else if value.is_instance_of::<PyInt>() {
        OptionValue::Int(value.extract()?)
    } else if let Ok(text) = value.downcast::<PyString>() {
        OptionValue::Text(text.to_string())
    } else {
        OptionValue::Text(value.str()?.to_string())
    })
}

/// Stops every member of `group`, letting other Python threads run meanwhile.
pub fn stop(py: Python<'_>, group: &Group) {
    py.allow_threads(|| group.stop());
}
