//! [`Blocking`]: a call that waits (servers starting, a failover, a cluster agreeing) run on
//! libuv's thread pool, its result a Promise on the JavaScript side.

use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{Env, Task};

use crate::convert::to_napi;

type Job<R> = Box<dyn FnOnce() -> embedis::bindings::Result<R> + Send>;

/// One blocking job; `AsyncTask<Blocking<R>>` is what a method returns to make a Promise.
pub struct Blocking<R> {
    job: Option<Job<R>>,
}

impl<R> Blocking<R> {
    pub fn new(job: impl FnOnce() -> embedis::bindings::Result<R> + Send + 'static) -> Self {
        Blocking {
            job: Some(Box::new(job)),
        }
    }
}

impl<R: ToNapiValue + TypeName + Send + 'static> Task for Blocking<R> {
    type Output = R;
    type JsValue = R;

    fn compute(&mut self) -> napi::Result<R> {
        let job = self.job.take().expect("a task runs once");
        job().map_err(to_napi)
    }

    fn resolve(&mut self, _env: Env, output: R) -> napi::Result<R> {
        Ok(output)
    }
}
