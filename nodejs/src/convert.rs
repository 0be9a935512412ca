//! JavaScript values to the Rust API's and back: command arguments (strings or Buffers),
//! replies (as JSON-like values; an error reply throws), options (entries `index.js` reads
//! from an options object), and the crate's errors as JavaScript errors — a mistake in the
//! call with code `InvalidArg` (a TypeError for `index.js`), the rest `GenericFailure`.

use napi::bindgen_prelude::{Buffer, Either};
use napi::Status;
use napi_derive::napi;
use serde_json::Value;

use embedis::bindings::{Error, OptionValue};

/// The crate's error as a JavaScript one.
pub fn to_napi(error: Error) -> napi::Error {
    let status = match error.usage {
        true => Status::InvalidArg,
        false => Status::GenericFailure,
    };
    napi::Error::new(status, error.text)
}

/// `to_napi` for `?`.
pub fn throw<T>(result: embedis::bindings::Result<T>) -> napi::Result<T> {
    result.map_err(to_napi)
}

/// A string argument's UTF-8 bytes, or a Buffer's.
pub fn bytes(value: &Either<String, Buffer>) -> &[u8] {
    match value {
        Either::A(text) => text.as_bytes(),
        Either::B(buffer) => buffer,
    }
}

/// One option as `index.js` passes it: the name and one of the values set.
#[napi(object)]
pub struct OptionEntry {
    pub name: String,
    pub int: Option<i64>,
    pub flag: Option<bool>,
    pub text: Option<String>,
    /// An object's entries as `[name, value]` pairs of strings (`users`, `config`).
    pub pairs: Option<Vec<Vec<String>>>,
}

/// The entries as the crate's options; `clock` is a `Clock` object given as `clock`.
pub fn options(
    entries: Vec<OptionEntry>,
    clock: Option<embedis::Clock>,
) -> napi::Result<embedis::bindings::Options> {
    let mut pairs: Vec<(String, OptionValue)> = entries.into_iter().map(option).collect();
    if let Some(clock) = clock {
        pairs.push(("clock".into(), OptionValue::Clock(clock)));
    }
    throw(embedis::bindings::Options::from_pairs(pairs))
}

fn option(entry: OptionEntry) -> (String, OptionValue) {
    let value = if let Some(n) = entry.int {
        OptionValue::Int(n)
    } else if let Some(flag) = entry.flag {
        OptionValue::Bool(flag)
    } else if let Some(pairs) = entry.pairs {
        let pairs = pairs
            .into_iter()
            .map(|mut kv| {
                kv.resize(2, String::new());
                let value = kv.pop().unwrap_or_default();
                (kv.pop().unwrap_or_default(), value)
            })
            .collect();
        OptionValue::Pairs(pairs)
    } else {
        OptionValue::Text(entry.text.unwrap_or_default())
    };
    (entry.name, value)
}

/// A reply as a JavaScript value: bulk and simple strings as strings, integers and doubles as
/// numbers, nil as null, arrays and sets as arrays, maps as objects; an error reply throws
/// with Redis's text.
pub fn reply(value: embedis::Reply) -> napi::Result<Value> {
    use embedis::Reply as R;
    let text = |bytes: &[u8]| Value::String(String::from_utf8_lossy(bytes).into_owned());
    Ok(match value {
        R::Error(e) | R::BlobError(e) => {
            return Err(napi::Error::new(
                Status::GenericFailure,
                String::from_utf8_lossy(&e).into_owned(),
            ))
        }
        R::Simple(s) | R::Bulk(s) | R::BigNumber(s) => text(&s),
        R::Verbatim { text: t, .. } => text(&t),
        R::Integer(n) => Value::from(n),
        R::Double(x) => serde_json::Number::from_f64(x)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(x.to_string())),
        R::Boolean(b) => Value::Bool(b),
        R::Null | R::NullArray => Value::Null,
        R::Array(items) | R::Set(items) | R::Push(items) => {
            Value::Array(items.into_iter().map(reply).collect::<napi::Result<_>>()?)
        }
        R::Attribute { value, .. } => reply(*value)?,
        R::Map(pairs) => {
            let mut object = serde_json::Map::new();
            for (key, value) in pairs {
                let key = match reply(key)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                object.insert(key, reply(value)?);
            }
            Value::Object(object)
        }
    })
}

/// A duration given in milliseconds (fractions allowed; a negative one is none).
pub fn millis(ms: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}
