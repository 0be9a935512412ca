//! PROVISIONAL (replaced by the conversion module being written on branch `dump`): strings only.

use crate::config::Config;
use crate::value::Value;
use embedis_rdb::{RdbError, RdbValue};

pub fn to_rdb(value: &Value) -> RdbValue {
    match value {
        Value::Int(n) => RdbValue::String(n.to_string().into_bytes()),
        other => RdbValue::String(
            other
                .string_bytes()
                .map(|b| b.into_owned())
                .unwrap_or_default(),
        ),
    }
}

pub fn from_rdb(value: RdbValue, _config: &Config) -> Result<Value, RdbError> {
    match value {
        RdbValue::String(s) => Ok(Value::string(&s)),
        _ => Err(RdbError::Corrupt("unsupported".into())),
    }
}
