//! Python values to the Rust API's and back: durations (`datetime.timedelta` or integer
//! milliseconds), command arguments (str, bytes, int, float), replies (RESP values as Python
//! values, errors raised).

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PySet};

use crate::EmbedisError;

/// A duration given as a `datetime.timedelta` or as integer milliseconds (not negative).
pub fn duration(value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    if let Ok(ms) = value.extract::<u64>() {
        return Ok(Duration::from_millis(ms));
    }
    if let Ok(seconds) = value.call_method0("total_seconds") {
        let seconds: f64 = seconds.extract()?;
        if seconds.is_finite() && seconds >= 0.0 {
            return Ok(Duration::from_secs_f64(seconds));
        }
    }
    Err(PyValueError::new_err(
        "a duration is a datetime.timedelta or milliseconds as a non-negative int",
    ))
}

/// One command argument as bytes: str (UTF-8), bytes, int or float, as redis-py sends them.
pub fn argument(value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(bytes) = value.downcast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    if let Ok(text) = value.extract::<String>() {
        return Ok(text.into_bytes());
    }
    if value.extract::<i64>().is_ok() || value.extract::<f64>().is_ok() {
        return Ok(value.str()?.to_string().into_bytes());
    }
    Err(PyValueError::new_err(format!(
        "a command argument is str, bytes, int or float, not {}",
        value.get_type().name()?
    )))
}

/// A reply as a Python value: bulk strings as bytes, simple strings as str, integers, None,
/// lists, dicts (RESP3 maps), sets, floats, booleans; an error reply raises `EmbedisError`
/// with Redis's text.
pub fn reply(py: Python<'_>, value: embedis::Reply) -> PyResult<PyObject> {
    use embedis::Reply as R;
    Ok(match value {
        R::Error(text) | R::BlobError(text) => {
            return Err(EmbedisError::new_err(
                String::from_utf8_lossy(&text).into_owned(),
            ))
        }
        R::Simple(text) => String::from_utf8_lossy(&text)
            .into_owned()
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        R::Bulk(bytes) | R::BigNumber(bytes) => PyBytes::new(py, &bytes).into_any().unbind(),
        R::Verbatim { text, .. } => PyBytes::new(py, &text).into_any().unbind(),
        R::Integer(n) => n.into_pyobject(py)?.into_any().unbind(),
        R::Double(x) => x.into_pyobject(py)?.into_any().unbind(),
        R::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        R::Null | R::NullArray => py.None(),
        R::Array(items) | R::Push(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(reply(py, item)?)?;
            }
            list.into_any().unbind()
        }
        R::Set(items) => {
            let set = PySet::empty(py)?;
            for item in items {
                set.add(reply(py, item)?)?;
            }
            set.into_any().unbind()
        }
        // Attributes decorate a value; the value is the reply.
        R::Attribute { value, .. } => return reply(py, *value),
        R::Map(pairs) => {
            let dict = PyDict::new(py);
            for (key, value) in pairs {
                dict.set_item(reply(py, key)?, reply(py, value)?)?;
            }
            dict.into_any().unbind()
        }
    })
}
